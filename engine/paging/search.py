"""Full-text search: BM25 over an FTS5 index with porter stemming, ranked within the namespace.

Bound parameters do not stop FTS5's own query syntax, so the MATCH string is never the user's
text: it is rebuilt from word terms, each one double-quoted, joined with OR. Nothing a caller
types (`alpha OR`, `-x`, `NEAR(`, `"`, `*`, `content:`) can become an operator or a column
filter, and the namespace filter lives in SQL WHERE, never in the MATCH string.

BM25 is computed here from the namespace's own statistics (its pages, their average length, how
many of them hold each term), never from the whole file's as FTS5's bm25() would: a tenant's
scores must not move when another tenant writes, or they would tell it what the other stores.
"""

import math
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memvm.engine.config import SearchTuning
from memvm.engine.models.pages import Level, Modality, PageType, Role
from memvm.engine.models.recall import SearchHit, SearchResult
from memvm.engine.paging import tiers
from memvm.engine.paging.fusion import Evidence, fuse
from memvm.engine.paging.levels import collapse
from memvm.engine.paging.pages import level_tokens
from memvm.engine.paging.projects import named_elsewhere, sees, visible_sql
from memvm.engine.paging.ranking import addressed_role, bm25, ideal_score, rescore
from memvm.engine.paging.snippets import searched, snippet, window_sql
from memvm.engine.paging.stopwords import STOPWORDS
from memvm.engine.paging.terms import query_terms, words
from memvm.engine.paging.tiers import bounded_postings, fulltext, pages_holding
from memvm.engine.paging.when import time_window
from memvm.engine.storage.api import Reads, Row
from memvm.engine.storage.dialects import SqlDialect
from memvm.engine.storage.fulltext import Posting
from memvm.engine.storage.statements import in_list, statement, template
from memvm.engine.storage.tokenizer import Stemmer

if TYPE_CHECKING:
    from memvm.engine.meaning.vector_index import VectorIndex

_MAX_ID_CANDIDATES = 8
_ID_SHAPE = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")

# What a hit reports of its page, and at which level the viewer's working set holds it (if it does).
_HIT_COLUMNS = """p.rowid, p.page_id, p.session, p.type, p.role, p.modality, p.created_at,
       p.tokens_full, p.tokens_reduced, p.tokens_abstract, p.tokens_reference, p.project"""
_MAPPED_IN_VIEWER = (
    "LEFT JOIN working_set w ON w.page_rowid = p.rowid AND w.namespace = p.namespace AND w.session = :viewer"
)

# The page `step` places before (or after) a candidate in its session, through pages_by_session.
_NEIGHBOUR = """,
       (SELECT q.rowid FROM pages q
        WHERE q.namespace = p.namespace AND q.session = p.session AND q.rowid {sign} p.rowid
        ORDER BY q.rowid {order} LIMIT 1 OFFSET {offset}) AS {name}{step}"""


def _neighbours(reach: int) -> str:
    return "".join(
        _NEIGHBOUR.format(sign=sign, order=order, offset=step - 1, name=name, step=step)
        for step in range(1, reach + 1)
        for sign, order, name in (("<", "DESC", "before"), (">", "ASC", "after"))
    )


# The best-scoring pages with what re-scoring needs: session, speaker, role, length, and the
# rowids of the pages up to `reach` before and after each in its session ({neighbours}). The
# `|| ''` keeps the namespace a filter on the rows found by rowid: as an index search it made
# SQLite walk the namespace's pages instead (30 ms at 100,000 pages).
_CANDIDATES = template(
    "search.candidates",
    """
SELECT p.rowid, p.session, p.speaker, p.role, p.tokens_full, p.created_at{neighbours}
FROM pages p WHERE p.rowid IN ({marks}) AND p.namespace || '' = :namespace
""",
    neighbours=_neighbours(2),
    marks=in_list([0, 0, 0])[0],
)


# The snippet comes from a bounded window of the text (see snippets), never from FTS5's snippet(),
# whose cost grows with the square of a term's occurrences in the page.
def _dress(dialect: SqlDialect) -> str:
    return f"""
SELECT {_HIT_COLUMNS}, {window_sql("t.content", dialect)}, w.level AS mapped_level
FROM pages p JOIN page_texts t ON t.rowid = p.rowid
{_MAPPED_IN_VIEWER}
WHERE p.rowid IN ({{marks}})
"""


_DRESS = template("search.dressed", _dress, marks=in_list([0, 0])[0])


# Above any BM25 score, and still valid JSON (infinity is not).
EXACT_ID_SCORE = 1_000_000.0

DEFAULT_TUNING = SearchTuning()

# The namespace's pages and their total length (BM25's collection statistics), and the file's pages.
_COLLECTION = statement(
    "search.collection",
    """
SELECT coalesce(sum(pages) FILTER (WHERE namespace = :namespace), 0),
       coalesce(sum(chars) FILTER (WHERE namespace = :namespace), 0),
       coalesce(sum(pages), 0)
FROM page_counts""",
)


def _id_candidates(text: str) -> list[str]:
    """Strings in the query that could be a page id, the whole query first."""
    whole = text.strip()
    candidates = [whole] if _ID_SHAPE.fullmatch(whole) else []
    for word in whole.split():
        word = word.strip(".,;:!?\"'()[]{}")
        if _ID_SHAPE.fullmatch(word) and word not in candidates:
            candidates.append(word)
    return candidates[:_MAX_ID_CANDIDATES]


@dataclass(frozen=True)
class _Filters:
    page_type: PageType | None
    modality: Modality | None
    session: str | None
    pinned_only: bool = False
    project: str | None = None  # the reader's: other projects' pages are left out

    def sql(self) -> tuple[str, dict[str, str]]:
        """The filters as clauses (each with its leading AND), and their parameters."""
        visible, params = visible_sql(self.project)
        clauses: list[str] = [visible] if visible else []
        for column, value in (
            ("type", self.page_type),
            ("modality", self.modality),
            ("session", self.session),
        ):
            if value is not None:
                clauses.append(f"AND p.{column} = :{column}")
                params[column] = str(value)
        if self.pinned_only:
            clauses.append("AND p.pinned = 1")
        return " ".join(clauses), params

    def admit(self, row: Posting) -> bool:
        return (
            (self.page_type is None or row["type"] == self.page_type.value)
            and (self.modality is None or row["modality"] == self.modality.value)
            and (self.session is None or row["session"] == self.session)
            and (not self.pinned_only or bool(row["pinned"]))
            and sees(self.project, row["project"])
        )


# Every filter at once: what the statements that take filters are prepared with.
_EVERY_FILTER = _Filters(PageType.NOTE, Modality.TEXT, "a session", True, "a project").sql()[0]

_BY_ID = template(
    "search.by id",
    f"""
SELECT {_HIT_COLUMNS}, p.abstract AS snippet, w.level AS mapped_level
FROM pages p
{_MAPPED_IN_VIEWER}
WHERE p.namespace = :namespace AND p.page_id IN ({{marks}}) {{filters}}
""",
    marks=in_list(["", ""])[0],
    filters=_EVERY_FILTER,
)


@dataclass(frozen=True)
class SemanticQuery:
    """The meaning side of a search: how to get the query's vector (awaited once the words are
    scored, so that embedding the query and reading the index overlap; it gives None when search
    by meaning is off, the model cannot run, or there is nothing to embed), and the copies of the
    namespace's vectors."""

    vector: Callable[[], Awaitable[Any]]  # a unit float32 vector from meaning.encoder, or None
    index: "VectorIndex | None"


async def _no_vector() -> None:
    return None


WORDS_ONLY = SemanticQuery(_no_vector, None)

# Which of the pages found by meaning a reader may see: live, and through the search's filters.
_ADMITTED = template(
    "search.admitted by meaning",
    """
SELECT p.rowid, p.type, p.modality, p.session, p.pinned, p.project FROM live_pages p
WHERE p.rowid IN ({marks}) AND p.namespace = :namespace""",
    marks=in_list([0, 0])[0],
)


def _hit(
    row: Row, *, score: float, snippet: str, reader: str | None, matched: Evidence | None = None
) -> SearchHit:
    mapped_level = row["mapped_level"]
    return SearchHit(
        page_id=row["page_id"],
        type=PageType(row["type"]),
        role=Role(row["role"]) if row["role"] else None,
        modality=Modality(row["modality"]),
        session=row["session"],
        created_at=row["created_at"],
        snippet=collapse(snippet),
        score=score,
        tokens=level_tokens(row).as_dict(),
        mapped=mapped_level is not None,
        level=None if mapped_level is None else int(Level(mapped_level)),
        project=named_elsewhere(reader, row["project"]),
        matched=matched,
    )


async def search_pages(
    conn: Reads,
    *,
    namespace: str,
    viewer_session: str,
    query: str,
    limit: int,
    stemmer: Stemmer,
    page_type: PageType | None = None,
    modality: Modality | None = None,
    only_session: str | None = None,
    pinned_only: bool = False,
    project: str | None = None,
    tuning: SearchTuning = DEFAULT_TUNING,
    meaning: SemanticQuery = WORDS_ONLY,
) -> SearchResult:
    """The `limit` best pages for `query`: an exact page id first, then by score.

    Pages are found by their words (BM25 with the bonuses of `tuning`: neighbours, speaker, role,
    session) and by their meaning (the vectors nearest the query's, in `meaning`), and ranked
    by one fused score (fusion.py); each hit says which matched. An exact id match scores
    EXACT_ID_SCORE. All within one read
    transaction, so the ranking and the snippets see the same pages. A reader in `project` finds
    that project's pages and those kept for every project (see projects.py).
    """
    filters = _Filters(page_type, modality, only_session, pinned_only, project)
    if not query.strip():
        return await _listed(conn, namespace, viewer_session, filters, limit)
    gone = await _expired(conn, namespace)
    hits = [
        hit
        for hit in await _exact_ids(conn, namespace, viewer_session, query, filters)
        if hit.page_id not in gone
    ]
    collection = await conn.one(_COLLECTION, namespace=namespace)
    assert collection is not None  # an aggregate always yields a row
    pages, chars, in_file = (int(value) for value in collection)
    terms = query_terms(query)
    by_words: dict[int, float] = {}
    ideal = 0.0
    if terms and len(hits) < limit:
        whole_file = pages == in_file
        when = time_window(query, conn.now) if tuning.time_boost else None
        asked = _Asked(
            terms,
            addressed_role(query),
            when,
            filters,
            limit,
            max(tuning.depth, limit),
            frozenset(gone.values()),
        )
        weights = {term: 1.0 for term in terms}
        by_words, ideal = await _scored(
            conn, namespace, weights, stemmer, (pages, chars, whole_file), asked, tuning
        )
        if by_words and tuning.feedback_pages:
            more = await _feedback(conn, namespace, by_words, weights, stemmer, (pages, whole_file), tuning)
            if more:
                weights |= more
                by_words, ideal = await _scored(
                    conn, namespace, weights, stemmer, (pages, chars, whole_file), asked, tuning
                )
    by_meaning: dict[int, float] = {}
    vector = await meaning.vector()
    if vector is not None and meaning.index is not None and len(hits) < limit:
        by_meaning = await _nearest(
            conn, namespace, (vector, meaning.index), filters, frozenset(gone.values()), tuning
        )
    scores, evidence = fuse(by_words, by_meaning, tuning, words_ideal=ideal)
    if scores:
        words = _Words(terms, stemmer.stems(terms), stemmer)
        hits += await _dressed(conn, (scores, evidence), hits, viewer_session, words, limit, project)
    results = hits[:limit]
    message = None if results else _nothing_found(pages, terms, filters, by_meaning=vector is not None)
    return SearchResult(results=results, total_pages=pages - len(gone), message=message)


async def _nearest(
    conn: Reads,
    namespace: str,
    asked: "tuple[Any, VectorIndex]",
    filters: "_Filters",
    gone: frozenset[int],
    tuning: SearchTuning,
) -> dict[int, float]:
    """The pages nearest the query's vector by meaning that the reader may see: rowid -> cosine."""
    vector, index = asked
    near = await index.nearest(conn, namespace, vector, tuning.meaning_depth)
    near = {rowid: cosine for rowid, cosine in near.items() if rowid not in gone}
    if not near:
        return {}
    rows = await conn.all_in(_ADMITTED, list(near), namespace=namespace)
    return {row["rowid"]: near[row["rowid"]] for row in rows if filters.admit(dict(row))}


@dataclass(frozen=True)
class _Asked:
    """What a search asks besides its words' weights: who it is about, and which pages may answer."""

    terms: list[str]
    role: Role | None
    when: tuple[float, float] | None  # the stretch of time the query names (see when.py)
    filters: "_Filters"
    limit: int
    depth: int
    gone: frozenset[int]  # rowids of pages expired, not yet deleted: never ranked, never a neighbour


async def _scored(
    conn: Reads,
    namespace: str,
    weights: dict[str, float],
    stemmer: Stemmer,
    collection: tuple[int, int, bool],
    asked: _Asked,
    tuning: SearchTuning,
) -> tuple[dict[int, float], float]:
    """The best `asked.depth` admitted pages by BM25 over the weighted terms, re-scored; and what
    a page holding every word of the query would score (ranking.ideal_score), which tells how
    much of the query the best page covers."""
    pages, chars, whole_file = collection
    terms = list(weights)
    each = stemmer.stem_each(terms)
    stem_weight: dict[str, float] = {}
    for term in terms:
        for stem in each[term]:
            stem_weight[stem] = max(stem_weight.get(stem, 0.0), weights[term])
    if pages > tiers.EXACT_PAGES:
        found, holding = await bounded_postings(
            conn, namespace, terms, stemmer, (pages, whole_file), asked.limit
        )
    else:
        found = await fulltext(conn).postings(
            conn, namespace, terms, list(stem_weight), stemmer, whole_file=whole_file
        )
        holding = pages_holding(found)
    scores = bm25(found, (pages, chars), holding, stem_weight, tuning)
    ideal = ideal_score(pages, holding, stem_weight, tuning)
    for rowid in asked.gone:
        scores.pop(rowid, None)
    admitted = {row["rowid"] for row in found if asked.filters.admit(row) and row["rowid"] not in asked.gone}
    top = sorted(admitted, key=lambda rowid: (-scores[rowid], rowid))[: asked.depth]
    if not top:
        return {}, ideal
    marks, listed = in_list(top)
    candidates = await conn.all(
        _CANDIDATES.fill(neighbours=_neighbours(tuning.neighbour_reach), marks=marks),
        namespace=namespace,
        **listed,
    )
    return rescore(candidates, scores, tuning, terms=asked.terms, role=asked.role, when=asked.when), ideal


_FEEDBACK_TEXTS = template(
    "search.feedback texts",
    "SELECT rowid, content FROM page_search WHERE rowid IN ({marks})",
    marks=in_list([0, 0])[0],
)


async def _feedback(
    conn: Reads,
    namespace: str,
    scores: dict[int, float],
    weights: dict[str, float],
    stemmer: Stemmer,
    collection: tuple[int, bool],
    tuning: SearchTuning,
) -> dict[str, float]:
    """Words to add to the query, with their weights: those that weigh most in the best pages.

    A word weighs by how much of each of the best pages it makes up, times the page's score as a
    share of the best one, summed over the pages, times its inverse document frequency. Words on
    more than tiers.POSTINGS pages of a large namespace are left out (see tiers).
    """
    pages, whole_file = collection
    best = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))[: tuning.feedback_pages]
    rows = await conn.all_in(_FEEDBACK_TEXTS, best)
    top = scores[best[0]] or 1.0
    asked = set(stemmer.stems(list(weights)))
    mass: dict[str, float] = defaultdict(float)
    surface: dict[str, str] = {}
    for row in rows:
        found = [
            w for w in words(row["content"] or "") if len(w) > 2 and w not in STOPWORDS and not w.isdigit()
        ]
        if not found:
            continue
        each = stemmer.stem_each(found)
        share = max(0.0, scores[row["rowid"]]) / top / len(found)
        for word in found:
            for stem in each[word]:
                if stem not in asked:
                    mass[stem] += share
                    surface.setdefault(stem, word)
    if not mass:
        return {}
    shortlist = sorted(mass, key=lambda stem: -mass[stem])[: tuning.feedback_terms * 3]
    cap = min(pages, tiers.POSTINGS) + 1
    counts = await fulltext(conn).capped_counts(
        conn, namespace, [surface[stem] for stem in shortlist], stemmer, whole_file, cap
    )
    weighed = {
        stem: mass[stem] * math.log(1 + (pages - count + 0.5) / (count + 0.5))
        for stem, count in zip(shortlist, counts, strict=True)
        if count > 0 and (pages <= tiers.EXACT_PAGES or count <= tiers.POSTINGS)
    }
    chosen = sorted(weighed, key=lambda stem: -weighed[stem])[: tuning.feedback_terms]
    if not chosen:
        return {}
    heaviest = weighed[chosen[0]] or 1.0
    return {surface[stem]: tuning.feedback_weight * weighed[stem] / heaviest for stem in chosen}


def _nothing_found(pages: int, terms: list[str], filters: _Filters, *, by_meaning: bool) -> str:
    """Why a search found nothing, in words, with what to try next: never a bare empty list."""
    if pages == 0:
        return "Nothing is stored in this memory yet, so there is nothing to find."
    if not terms:
        return (
            "The query has no word to search for (only common words such as 'what' or 'the', or "
            "none at all)"
            + (", and nothing stored stands out by its meaning" if by_meaning else "")
            + ": ask with words the page itself would contain, or a page id."
        )
    narrowed = (
        [
            name
            for name, value in (("type", filters.page_type), ("modality", filters.modality))
            if value is not None
        ]
        + (["scope=session"] if filters.session is not None else [])
        + (["pinned only"] if filters.pinned_only else [])
    )
    widen = f" Drop {' and '.join(narrowed)} to search everything." if narrowed else ""
    matched = "these words or their meaning" if by_meaning else "these words"
    return (
        f"No page matches {matched} among the {pages} stored.{widen} Try other words (a synonym, "
        "a name, a date or a place), fewer words, or read the manifest to see what is stored; "
        "this does not mean the topic never came up."
    )


async def _exact_ids(
    conn: Reads, namespace: str, viewer_session: str, query: str, filters: _Filters
) -> list[SearchHit]:
    """The pages whose id the query names, in the query's order."""
    candidates = _id_candidates(query)
    if not candidates:
        return []
    clauses, params = filters.sql()
    marks, listed = in_list(candidates)
    rows = await conn.all(
        _BY_ID.fill(marks=marks, filters=clauses),
        viewer=viewer_session,
        namespace=namespace,
        **listed,
        **params,
    )
    order = {page_id: i for i, page_id in enumerate(candidates)}
    return [
        _hit(row, score=EXACT_ID_SCORE, snippet=row["snippet"], reader=filters.project)
        for row in sorted(rows, key=lambda r: order[r["page_id"]])
    ]


# What an empty query lists: the pinned pages (few, on their index), then the rest newest first,
# walking the namespace's index backwards rather than sorting it.
_LISTED = template(
    "search.listed",
    f"""
SELECT {_HIT_COLUMNS}, p.abstract AS snippet, w.level AS mapped_level
FROM live_pages p
{_MAPPED_IN_VIEWER}
WHERE p.namespace = :namespace AND p.pinned = :pinned {{filters}}
ORDER BY p.rowid DESC
LIMIT :limit
""",
    filters=_EVERY_FILTER,
)


async def _listed(
    conn: Reads, namespace: str, viewer_session: str, filters: _Filters, limit: int
) -> SearchResult:
    """What is remembered, without a query: pinned pages first, then the newest, each newest first."""
    clauses, params = filters.sql()
    hits: list[SearchHit] = []
    for pinned in (1, 0):
        if len(hits) >= limit or (pinned == 0 and filters.pinned_only):
            break
        rows = await conn.all(
            _LISTED.fill(filters=clauses),
            viewer=viewer_session,
            namespace=namespace,
            pinned=pinned,
            limit=limit - len(hits),
            **params,
        )
        hits += [_hit(row, score=0.0, snippet=row["snippet"], reader=filters.project) for row in rows]
    collection = await conn.one(_COLLECTION, namespace=namespace)
    assert collection is not None  # an aggregate always yields a row
    pages = int(collection[0]) - len(await _expired(conn, namespace))
    message = None if hits else "Nothing is remembered here yet."
    return SearchResult(results=hits, total_pages=pages, message=message)


# Pages whose expiry has come and that no write has deleted yet: few, on their partial index.
_EXPIRED = statement(
    "search.expired", "SELECT page_id, rowid FROM expired_pages WHERE namespace = :namespace"
)


async def _expired(conn: Reads, namespace: str) -> dict[str, int]:
    """The namespace's expired pages by id: the full-text index still holds them."""
    return {row["page_id"]: row["rowid"] for row in await conn.all(_EXPIRED, namespace=namespace)}


@dataclass(frozen=True)
class _Words:
    """The words a search ranked by, with their stems: what its snippets show."""

    terms: list[str]
    stems: list[str]
    stemmer: Stemmer


async def _dressed(
    conn: Reads,
    ranked: tuple[dict[int, float], dict[int, Evidence]],
    found: list[SearchHit],
    viewer_session: str,
    words: _Words,
    limit: int,
    reader: str | None,
) -> list[SearchHit]:
    """The best-scoring pages not already `found`, with snippets, what matched, and their place in
    the viewer's set."""
    scores, evidence = ranked
    best = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))[: limit + len(found)]
    placed_by = searched(words.terms, words.stems)
    marks, listed = in_list(best)
    rows = await conn.all(_DRESS.fill(marks=marks), searched=placed_by, viewer=viewer_session, **listed)
    by_rowid = {row["rowid"]: row for row in rows}
    seen = {hit.page_id for hit in found}
    return [
        _hit(
            row,
            score=round(scores[rowid], 6),
            snippet=snippet(row["snippet_window"] or "", row["snippet_at"], words.stems, words.stemmer),
            reader=reader,
            matched=evidence[rowid],
        )
        for rowid in best
        if rowid in by_rowid and (row := by_rowid[rowid])["page_id"] not in seen
    ]
