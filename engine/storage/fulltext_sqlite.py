"""The FTS5 index, read for BM25: which pages hold a query's terms, and how often.

Search computes BM25 itself from these (paging/search.py, paging/tiers.py); the PostgreSQL backend
answers the same questions from its own postings table (fulltext_postgres.py).

Term frequencies: how often each of a query's stems occurs in each of a namespace's pages.

The full-text index is shared by every namespace in the file, and its per-occurrence view
(pages_terms) can only be read term by term, across all pages. Counting a term's occurrences
that way costs as much as the whole file holds of it: a tenant whose pages repeat "house" a
million times made every other tenant's search for "house" take seconds. So when the file holds
other namespaces and more occurrences of the query's stems than the namespace's own pages
holding them have characters to read, those pages are found through the index a page at a time
(which skips other pages' occurrences), and the stems are counted in their own text by the same
tokenizer. Either way costs at most about what the namespace itself holds, and the counts are
the same: which way is taken never changes a score, so a tenant cannot tell what others store.
"""

from typing import Any

import anyio
from memvm.engine.storage.api import Reads
from memvm.engine.storage.fulltext import Candidates, Posting
from memvm.engine.storage.statements import in_list, statement, template
from memvm.engine.storage.tokenizer import Stemmer, match_expression

# Below this many occurrences in the file, counting them one by one is cheap whoever holds them.
FEW_OCCURRENCES = 10_000
# Texts counted at once, in characters: the memory that counting in text takes.
_TEXT_BATCH_CHARS = 4_000_000

# Statements composed per query (a term's count repeated for each term, an IN list of stems) are
# templates whose slots hold SQL the engine writes from counts and caps, never from input; each
# term's match expression is a parameter of its own (`:match0`, `:match1`…).

# Every occurrence of the query's stems, counted per page and stem. The count comes first and
# the page is joined to each count, not to each occurrence: a page that repeats a term
# thousands of times is then read once, not once per occurrence.
_COUNTED = template(
    "fulltext_sqlite.counted",
    """
SELECT t.doc AS rowid, t.stem, t.tf, p.search_chars AS chars, p.type, p.modality, p.session, p.pinned, p.project
FROM (SELECT doc, term AS stem, count(*) AS tf FROM pages_terms WHERE term IN ({marks}) GROUP BY doc, term) AS t
JOIN pages p ON p.rowid = t.doc
WHERE p.namespace = :namespace
""",
    backend="sqlite",
    marks=":stem0, :stem1",
)
_OCCURRENCES = template(
    "fulltext_sqlite.occurrences",
    "SELECT count(*) FROM (SELECT 1 FROM pages_terms WHERE term IN ({marks}) LIMIT :cap)",
    backend="sqlite",
    marks=":stem0",
)
# The namespace's pages holding any of the terms. CROSS JOIN keeps the index outermost (see
# _capped_in_namespace).
_HOLDING = statement(
    "fulltext_sqlite.holding",
    """
SELECT p.rowid, p.search_chars AS chars, p.type, p.modality, p.session, p.pinned, p.project
FROM pages_fts CROSS JOIN pages p ON p.rowid = pages_fts.rowid
WHERE pages_fts MATCH :match AND p.namespace = :namespace
""",
    backend="sqlite",
)
_TEXTS = template(
    "fulltext_sqlite.texts",
    "SELECT rowid, content, speaker, search_key FROM page_search WHERE rowid IN ({marks})",
    backend="sqlite",
    marks=":in0",
)


def _capped_in_namespace(term: int, cap: int) -> str:
    """A term's pages in the namespace, counted no further than `cap`. CROSS JOIN keeps the
    full-text index outermost; left to choose, SQLite walked the namespace's pages and ran the
    match once for each of them (seconds at 100,000 pages)."""
    return (
        "SELECT (SELECT count(*) FROM ("
        " SELECT 1 FROM pages_fts CROSS JOIN pages p ON p.rowid = pages_fts.rowid"
        f" WHERE pages_fts MATCH :match{term} AND p.namespace = :namespace LIMIT {int(cap)}))"
    )


def _capped_in_file(term: int, cap: int) -> str:
    """The same when the namespace holds every page of the file: the count is the same without the
    join to the pages, at a tenth of the cost."""
    return (
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM pages_fts"
        f" WHERE pages_fts MATCH :match{term} AND :namespace IS NOT NULL LIMIT {int(cap)}))"
    )


def _newest_count(term: int, cap: int) -> str:
    """The newest `cap` of the namespace's pages holding a term: how many, and the oldest of them.
    The index walks its postings newest first and stops there."""
    return (
        "SELECT count(*), min(rowid) FROM ("
        " SELECT pages_fts.rowid AS rowid FROM pages_fts CROSS JOIN pages p ON p.rowid = pages_fts.rowid"
        f" WHERE pages_fts MATCH :match{term} AND p.namespace = :namespace"
        f" ORDER BY pages_fts.rowid DESC LIMIT {int(cap)})"
    )


def _newest_count_in_file(term: int, cap: int) -> str:
    """The same when the namespace holds every page of the file: the index alone answers."""
    return (
        "SELECT count(*), min(rowid) FROM ("
        f" SELECT rowid FROM pages_fts WHERE pages_fts MATCH :match{term} AND :namespace IS NOT NULL"
        f" ORDER BY rowid DESC LIMIT {int(cap)})"
    )


_COUNTS = template(
    "fulltext_sqlite.counts",
    "{counts}",
    backend="sqlite",
    counts=" UNION ALL ".join([_capped_in_namespace(0, 100), _capped_in_file(1, 100)]),
)
_NEWEST_COUNTS = template(
    "fulltext_sqlite.newest counts",
    "{counts}",
    backend="sqlite",
    counts=" UNION ALL ".join([_newest_count(0, 100), _newest_count(1, 100)]),
)
_NEWEST = template(
    "fulltext_sqlite.newest",
    """
SELECT p.rowid, p.search_chars AS chars, p.type, p.modality, p.session, p.pinned, p.project
FROM pages_fts CROSS JOIN pages p ON p.rowid = pages_fts.rowid
WHERE pages_fts MATCH :match AND p.namespace = :namespace ORDER BY pages_fts.rowid DESC LIMIT {count}""",
    backend="sqlite",
    count="10",
)
# Pages holding a match no older than a rowid: the index skips to it.
_SINCE = statement(
    "fulltext_sqlite.since",
    """
SELECT pages_fts.rowid FROM pages_fts CROSS JOIN pages p ON p.rowid = pages_fts.rowid
WHERE pages_fts MATCH :match AND p.namespace = :namespace AND pages_fts.rowid >= :floor""",
    backend="sqlite",
)


def _matches(terms: list[str]) -> dict[str, str]:
    return {f"match{index}": match_expression([term]) for index, term in enumerate(terms)}


async def capped_counts(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, whole_file: bool, cap: int
) -> list[int]:
    """Each term's page count in the namespace, counted no further than `cap`, in one trip."""
    capped = _capped_in_file if whole_file else _capped_in_namespace
    counts = " UNION ALL ".join(capped(index, cap) for index in range(len(terms)))
    rows = await conn.all(_COUNTS.fill(counts=counts), namespace=namespace, **_matches(terms))
    return [int(row[0]) for row in rows]


async def newest_counts(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, cap: int, whole_file: bool
) -> list[tuple[int, int | None]]:
    """Each term's page count in the namespace counted no further than `cap`, and, when it
    reaches `cap`, the oldest of the newest `cap` pages holding it; in one trip."""
    counted = _newest_count_in_file if whole_file else _newest_count
    counts = " UNION ALL ".join(counted(index, cap) for index in range(len(terms)))
    rows = await conn.all(_NEWEST_COUNTS.fill(counts=counts), namespace=namespace, **_matches(terms))
    return [(int(row[0]), int(row[1]) if int(row[0]) >= cap else None) for row in rows]


async def newest_holding(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, count: int
) -> list[Posting]:
    """The namespace's newest `count` pages holding every one of `terms`, as postings without a
    stem: (rowid, chars, type, modality, session, pinned, project)."""
    query = " AND ".join(match_expression([term]) for term in terms)
    newest = _NEWEST.fill(count=str(int(count)))
    return [dict(row) for row in await conn.all(newest, match=query, namespace=namespace)]


async def holding_among(
    conn: Reads, namespace: str, term: str, stemmer: Stemmer, among: Candidates
) -> set[int]:
    """Which of the pages `among` hold `term`: a match of the two together, which the index
    answers by skipping through the longer postings, never by reading them."""
    joined = " AND " if among.every else " OR "
    group = "(" + joined.join(match_expression([t]) for t in among.terms) + ")"
    match = f"{group} AND {match_expression([term])}"
    rows = await conn.all(_SINCE, match=match, namespace=namespace, floor=among.floor)
    return {int(row[0]) for row in rows}


async def postings(
    conn: Reads, namespace: str, terms: list[str], stems: list[str], stemmer: Stemmer, *, whole_file: bool
) -> list[Posting]:
    """One posting (rowid, stem, tf, chars, type, modality, session, pinned, project) per page and stem of `terms`."""
    if not stems:
        return []
    marks, named = in_list(stems, prefix="stem")
    holding = await _holding_in_bulk(conn, namespace, terms, stems, (marks, named), stemmer, whole_file)
    if holding is None:
        counted = _COUNTED.fill(marks=marks)
        return [dict(row) for row in await conn.all(counted, namespace=namespace, **named)]
    found: list[Posting] = []
    for batch in _batches(holding):
        texts = await conn.all_in(_TEXTS, batch)
        rows = [(row["rowid"], row["content"], row["speaker"], row["search_key"]) for row in texts]
        counts = await anyio.to_thread.run_sync(stemmer.frequencies, rows, stems)
        found += [{**holding[rowid], "stem": stem, "tf": tf} for rowid, stem, tf in counts]
    return found


async def _holding_in_bulk(
    conn: Reads,
    namespace: str,
    terms: list[str],
    stems: list[str],
    listed: tuple[str, dict[str, Any]],
    stemmer: Stemmer,
    whole_file: bool,
) -> dict[int, Posting] | None:
    """The namespace's pages holding `stems`, when counting in their text costs less than
    counting the file's occurrences one by one; None when it does not."""
    # A query for a term finds the pages holding its stem when the term is one token; porter is
    # not idempotent ("hous" stems to "hou"), so the stem itself cannot be the query.
    each = stemmer.stem_each(terms)
    words = {each[term][0]: term for term in terms if len(each[term]) == 1}
    if whole_file or not all(stem in words for stem in stems):
        return None
    if not await _more_than(conn, listed, FEW_OCCURRENCES):
        return None
    query = match_expression(words[stem] for stem in stems)
    holding = {row["rowid"]: dict(row) for row in await conn.all(_HOLDING, match=query, namespace=namespace)}
    # A character of text costs about what one occurrence does counted one by one (0.3 and
    # 0.4 microseconds on the reference machine).
    text_cost = sum(int(page["chars"]) for page in holding.values())
    return holding if await _more_than(conn, listed, text_cost) else None


async def _more_than(conn: Reads, listed: tuple[str, dict[str, Any]], cap: int) -> bool:
    """Whether the file holds more than `cap` occurrences of the listed stems, reading no more than that."""
    marks, named = listed
    row = await conn.one(_OCCURRENCES.fill(marks=marks), cap=cap + 1, **named)
    return row is not None and int(row[0]) > cap


def _batches(holding: dict[int, Posting]) -> list[list[int]]:
    batches: list[list[int]] = [[]]
    size = 0
    for rowid, page in holding.items():
        if batches[-1] and size + int(page["chars"]) > _TEXT_BATCH_CHARS:
            batches.append([])
            size = 0
        batches[-1].append(rowid)
        size += int(page["chars"])
    return [batch for batch in batches if batch]
