"""What a search reads in a large namespace: a bounded amount, whatever the namespace's size.

Ranking on every occurrence of every term reads, for a term on tens of thousands of pages, tens of
thousands of rows, while such a term weighs least (its inverse document frequency is low): 100 ms
and more at a million pages. So in a namespace of more than EXACT_PAGES pages a query's terms are
read by how common they are:

- The rarest terms are read whole, every page holding each and how often, least common first, as
  long as their pages add up to at most POSTINGS.
- A common term is never read whole. Which candidate pages hold it is asked of the index for them
  alone (an AND with what made them candidates, which the index answers by skipping), and it
  scores as one occurrence in each: in pages of a few sentences a word is nearly always said once.
  Its page count, for the inverse document frequency, is estimated from how far back its newest
  POSTINGS + 1 pages reach among the namespace's rowids (its pages assumed spread evenly over
  time, and the namespace's over its rowids: forgotten pages, and in a shared file other
  namespaces' pages written in between, make it a slight underestimate).

The candidates are the pages holding a term read whole. For a query of common terms only they are
the newest CANDIDATES pages holding all of them; when fewer than the limit do, those holding two
of them, then those holding one. A page holding none of the terms read whole, or older than that
tier, is not ranked: the trade-off, whose agreement with ranking every page
tests/bench/search_scale.py measures. Namespaces of up to EXACT_PAGES pages are ranked on every
occurrence of every term: at that size it costs no more than this.
"""

from collections import defaultdict
from itertools import combinations
from typing import Any

from memvm.engine.storage.api import Reads
from memvm.engine.storage.fulltext import Candidates, FullText, Posting
from memvm.engine.storage.statements import statement
from memvm.engine.storage.tokenizer import Stemmer

EXACT_PAGES = 20_000
POSTINGS = 2_000
CANDIDATES = 1_000

# The namespace's oldest and newest rowids, each off the end of an index.
_ROWIDS = statement(
    "tiers.rowids",
    """
SELECT (SELECT min(rowid) FROM pages WHERE namespace = :namespace),
       (SELECT max(rowid) FROM pages WHERE namespace = :namespace)""",
)


def fulltext(conn: Reads) -> FullText:
    """The full-text index of the transaction's backend."""
    return conn.dialect.fulltext


def pages_holding(postings: list[Posting]) -> dict[str, int]:
    """How many pages of `postings` hold each stem: a stem's page count when they are all of its."""
    holding: dict[str, int] = defaultdict(int)
    for row in postings:
        holding[row["stem"]] += 1
    return holding


async def bounded_postings(
    conn: Reads,
    namespace: str,
    terms: list[str],
    stemmer: Stemmer,
    collection: tuple[int, bool],
    limit: int,
) -> tuple[list[Posting], dict[str, int]]:
    """The postings to rank by in a large namespace, and each stem's page count (see above)."""
    pages, whole_file = collection
    index = fulltext(conn)
    newest = await index.newest_counts(conn, namespace, terms, stemmer, POSTINGS + 1, whole_file)
    counted = dict(zip(terms, (count for count, _ in newest), strict=True))
    rare: list[str] = []
    read = 0
    for term in sorted((term for term in terms if counted[term]), key=lambda term: counted[term]):
        if read + counted[term] > POSTINGS:
            break
        rare.append(term)
        read += counted[term]
    common = [term for term in terms if counted[term] and term not in rare]
    if not rare and not common:
        # No page holds any of the terms (and an empty match is a syntax error to FTS5).
        return [], {}
    found: list[Posting] = []
    if rare:
        found = await index.postings(
            conn, namespace, rare, stemmer.stems(rare), stemmer, whole_file=whole_file
        )
        pages_of = {row["rowid"]: row for row in found}
        groups = [Candidates(rare, every=False, floor=0, rowids=list(pages_of))]
    else:
        groups, pages_of = await _common_only(conn, namespace, common, stemmer, limit)
    holding = pages_holding(found)
    if not pages_of:
        return [], {}
    each = stemmer.stem_each(common)
    floors = dict(zip(terms, (floor for _, floor in newest), strict=True))
    rowids = await conn.one(_ROWIDS, namespace=namespace) if common else None
    for term in common:
        stems = [stem for stem in each[term] if stem not in holding]
        if not stems:
            continue
        floor = floors[term]
        if floor is None or rowids is None or rowids[0] is None:
            count = counted[term]  # counted in full
        else:
            count = _estimated_count(floor, pages, rowids)
        present: set[int] = set()
        for group in groups:
            if group.every and term in group.terms:
                present.update(group.rowids)
            else:
                present |= await index.holding_among(conn, namespace, term, stemmer, group)
        for stem in stems:
            holding[stem] = count
            found += [{**pages_of[rowid], "stem": stem, "tf": 1} for rowid in present if rowid in pages_of]
    return found, dict(holding)


async def _common_only(
    conn: Reads, namespace: str, common: list[str], stemmer: Stemmer, limit: int
) -> tuple[list[Candidates], dict[int, Posting]]:
    """The candidates of a query of common terms only: the newest pages holding all of them, then
    (while fewer than `limit`) those holding two, then one."""
    index = fulltext(conn)
    tiers = [common]
    if len(common) > 2:
        tiers += [list(pair) for pair in combinations(common, 2)]
    if len(common) > 1:
        tiers += [[term] for term in common]
    groups: list[Candidates] = []
    pages_of: dict[int, Posting] = {}
    for tier in tiers:
        if len(pages_of) >= limit and len(tier) < len(groups[-1].terms):
            break
        rows = await index.newest_holding(conn, namespace, tier, stemmer, CANDIDATES)
        floor = min((row["rowid"] for row in rows), default=0) if len(rows) >= CANDIDATES else 0
        groups.append(Candidates(tier, every=True, floor=floor, rowids=[row["rowid"] for row in rows]))
        pages_of.update((row["rowid"], row) for row in rows)
    return groups, pages_of


def _estimated_count(floor: int, pages: int, rowids: Any) -> int:
    """A common term's page count: POSTINGS + 1 of them since `floor`, spread evenly over the
    namespace's `rowids` (oldest, newest)."""
    oldest, newest = int(rowids[0]), int(rowids[1])
    since = pages * (newest - floor + 1) / max(1, newest - oldest + 1)
    return min(pages, round((POSTINGS + 1) * pages / max(POSTINGS + 1, since)))
