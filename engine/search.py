"""Full-text search: FTS5 BM25 with porter stemming, ranked globally across the namespace.

Bound parameters do not stop FTS5's own query syntax, so the MATCH string is never the user's
text: it is rebuilt from word terms, each one double-quoted, joined with OR. Nothing a caller
types (`alpha OR`, `-x`, `NEAR(`, `"`, `*`, `content:`) can become an operator or a column
filter, and the namespace filter lives in SQL WHERE, never in the MATCH string.
"""

import re

from memvm.engine.db import Database, Row
from memvm.engine.levels import collapse
from memvm.engine.models import Level, Modality, PageType, Role, SearchHit, SearchResult
from memvm.engine.pages import level_tokens
from memvm.engine.stopwords import STOPWORDS

# Words as unicode61 sees them: letters, digits and marks; everything else separates terms.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
_MAX_TERMS = 32
_MAX_ID_CANDIDATES = 8
_ID_SHAPE = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")

# What a hit reports of its page, and at which level the viewer's working set holds it (if it does).
_HIT_COLUMNS = """p.rowid, p.page_id, p.session, p.type, p.role, p.modality, p.created_at,
       p.tokens_full, p.tokens_reduced, p.tokens_abstract, p.tokens_reference"""
_MAPPED_IN_VIEWER = (
    "LEFT JOIN working_set w ON w.page_rowid = p.rowid AND w.namespace = p.namespace AND w.session = ?"
)

# Rank first, then dress only the winners: snippet() and the working-set join cost as much as the
# ranking itself when they run for every match, and all but a few matches are thrown away. Each
# candidate comes with the pages just before and after it in its own session, for NEIGHBOUR_WEIGHT.
_RANK = """
WITH top AS (
    SELECT pages_fts.rowid AS rowid, -bm25(pages_fts) AS score
    FROM pages_fts JOIN pages p ON p.rowid = pages_fts.rowid
    WHERE pages_fts MATCH ? AND p.namespace = ? {filters}
    ORDER BY bm25(pages_fts), pages_fts.rowid
    LIMIT ?
)
SELECT top.rowid, top.score,
       (SELECT max(q.rowid) FROM pages q
        WHERE q.namespace = p.namespace AND q.session = p.session AND q.rowid < p.rowid) AS previous,
       (SELECT min(q.rowid) FROM pages q
        WHERE q.namespace = p.namespace AND q.session = p.session AND q.rowid > p.rowid) AS following
FROM top JOIN pages p ON p.rowid = top.rowid
"""

# The pages drive the join (their rowids come from _RANK): with the full-text table first, SQLite
# ran the whole match again for every page, four times slower.
_DRESS = f"""
SELECT {_HIT_COLUMNS}, snippet(pages_fts, 0, '', '', '…', 24) AS snippet, w.level AS mapped_level
FROM pages p
JOIN pages_fts ON pages_fts.rowid = p.rowid
{_MAPPED_IN_VIEWER}
WHERE p.rowid IN ({{marks}}) AND pages_fts MATCH ?
"""

# Evidence often sits beside the turn that matches best (a question answered in the next message),
# so a match gains this share of its session neighbours' BM25 scores. Measured on the development
# data (tests/bench/retrieval.py): 0.2 lifts LoCoMo R@10 by about .05 and leaves LongMemEval as it
# was; 0.5 helps LoCoMo more but costs LongMemEval .02, so one setting serves both.
NEIGHBOUR_WEIGHT = 0.2
# How many BM25 matches are re-scored: the neighbour bonus reorders within these.
RANK_DEPTH = 100

_BY_ID = f"""
SELECT {_HIT_COLUMNS}, p.abstract AS snippet, w.level AS mapped_level
FROM pages p
{_MAPPED_IN_VIEWER}
WHERE p.namespace = ? AND p.page_id IN ({{marks}}) {{filters}}
"""

# Above any BM25 score, and still valid JSON (infinity is not).
EXACT_ID_SCORE = 1_000_000.0

_TOTAL = "SELECT coalesce((SELECT pages FROM page_counts WHERE namespace = ?), 0)"


def query_terms(text: str) -> list[str]:
    """The distinct, lower-cased, non-stopword terms of `text`, in order, at most 32."""
    seen: dict[str, None] = {}
    for term in _TERM.findall(text.lower()):
        if term not in STOPWORDS and term not in seen:
            seen[term] = None
    return list(seen)[:_MAX_TERMS]


def match_expression(terms: list[str]) -> str:
    """An FTS5 query that ORs each term as a quoted string: no operator survives quoting."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _id_candidates(text: str) -> list[str]:
    """Strings in the query that could be a page id, the whole query first."""
    whole = text.strip()
    candidates = [whole] if _ID_SHAPE.fullmatch(whole) else []
    for word in whole.split():
        word = word.strip(".,;:!?\"'()[]{}")
        if _ID_SHAPE.fullmatch(word) and word not in candidates:
            candidates.append(word)
    return candidates[:_MAX_ID_CANDIDATES]


def _filters(
    page_type: PageType | None, modality: Modality | None, session: str | None
) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if page_type is not None:
        clauses.append("AND p.type = ?")
        params.append(page_type.value)
    if modality is not None:
        clauses.append("AND p.modality = ?")
        params.append(modality.value)
    if session is not None:
        clauses.append("AND p.session = ?")
        params.append(session)
    return " ".join(clauses), params


def rescore(candidates: list[Row]) -> dict[int, float]:
    """BM25 plus NEIGHBOUR_WEIGHT times the scores of the same-session neighbours among `candidates`."""
    scores = {row["rowid"]: float(row["score"]) for row in candidates}
    return {
        row["rowid"]: scores[row["rowid"]]
        + NEIGHBOUR_WEIGHT * (scores.get(row["previous"], 0.0) + scores.get(row["following"], 0.0))
        for row in candidates
    }


def _hit(row: Row, *, score: float) -> SearchHit:
    mapped_level = row["mapped_level"]
    return SearchHit(
        page_id=row["page_id"],
        type=PageType(row["type"]),
        role=Role(row["role"]) if row["role"] else None,
        modality=Modality(row["modality"]),
        session=row["session"],
        created_at=row["created_at"],
        snippet=collapse(row["snippet"] or ""),
        score=score,
        tokens=level_tokens(row).as_dict(),
        mapped=mapped_level is not None,
        level=None if mapped_level is None else int(Level(mapped_level)),
    )


async def search_pages(
    db: Database,
    *,
    namespace: str,
    viewer_session: str,
    query: str,
    limit: int,
    page_type: PageType | None = None,
    modality: Modality | None = None,
    only_session: str | None = None,
) -> SearchResult:
    """The `limit` best pages for `query`: an exact page id first, then by score.

    `score` is higher for better matches: BM25 (negated, so higher is better) plus a share of the
    scores of matching neighbours in the same session; an exact id match scores EXACT_ID_SCORE.
    """
    filters, filter_params = _filters(page_type, modality, only_session)
    hits: list[SearchHit] = []
    candidates = _id_candidates(query)
    if candidates:
        marks = ", ".join("?" for _ in candidates)
        rows = await db.fetchall(
            _BY_ID.format(marks=marks, filters=filters),
            (viewer_session, namespace, *candidates, *filter_params),
        )
        order = {page_id: i for i, page_id in enumerate(candidates)}
        for row in sorted(rows, key=lambda r: order[r["page_id"]]):
            hits.append(_hit(row, score=EXACT_ID_SCORE))
    terms = query_terms(query)
    if terms and len(hits) < limit:
        match = match_expression(terms)
        matches = await db.fetchall(
            _RANK.format(filters=filters), (match, namespace, *filter_params, max(RANK_DEPTH, limit))
        )
        scores = rescore(matches)
        seen = {hit.page_id for hit in hits}
        best = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))[: limit + len(hits)]
        if best:
            rows = await db.fetchall(
                _DRESS.format(marks=", ".join("?" * len(best))), (viewer_session, *best, match)
            )
            by_rowid = {row["rowid"]: row for row in rows}
            for rowid in best:
                row = by_rowid[rowid]
                if row["page_id"] not in seen:
                    hits.append(_hit(row, score=round(scores[rowid], 6)))
    total = await db.fetchone(_TOTAL, (namespace,))
    return SearchResult(results=hits[:limit], total_pages=int(total[0]) if total else 0)
