"""Full-text search: FTS5 BM25 with porter stemming, ranked globally across the namespace.

Bound parameters do not stop FTS5's own query syntax, so the MATCH string is never the user's
text: it is rebuilt from word terms, each one double-quoted, joined with OR. Nothing a caller
types (`alpha OR`, `-x`, `NEAR(`, `"`, `*`, `content:`) can become an operator or a column
filter, and the namespace filter lives in SQL WHERE, never in the MATCH string.
"""

import re

from memvm.engine.config import SearchTuning
from memvm.engine.db import Reads, Row
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
# candidate comes with its session, its speaker and the rowids of the pages up to `reach` before and
# after it in its session ({neighbours}), for the re-scoring in `rescore`.
_RANK = """
WITH top AS (
    SELECT pages_fts.rowid AS rowid, -bm25(pages_fts) AS score
    {source}
    ORDER BY bm25(pages_fts), pages_fts.rowid
    LIMIT ?
)
SELECT top.rowid, top.score, p.session, p.speaker, p.role, p.tokens_full{neighbours}
FROM top JOIN pages p ON p.rowid = top.rowid
WHERE p.namespace = ?
"""
# Which matches are ranked: those of the namespace (and filters), joined page by page; or, when
# the namespace holds every page of the file and nothing is filtered, all of them without the
# join, which is a third of a search at 100,000 pages. The outer WHERE above still drops any page
# of another namespace written in between, so no foreign page can slip in.
_IN_NAMESPACE = """FROM pages_fts JOIN pages p ON p.rowid = pages_fts.rowid
    WHERE pages_fts MATCH ? AND p.namespace = ? {filters}"""
_WHOLE_FILE = "FROM pages_fts WHERE pages_fts MATCH ?"
# The page `step` places before (or after) a candidate in its session, through pages_by_session.
_NEIGHBOUR = """,
       (SELECT q.rowid FROM pages q
        WHERE q.namespace = p.namespace AND q.session = p.session AND q.rowid {sign} p.rowid
        ORDER BY q.rowid {order} LIMIT 1 OFFSET {offset}) AS {name}{step}"""


def _rank_sql(source: str, reach: int) -> str:
    neighbours = "".join(
        _NEIGHBOUR.format(sign=sign, order=order, offset=step - 1, name=name, step=step)
        for step in range(1, reach + 1)
        for sign, order, name in (("<", "DESC", "before"), (">", "ASC", "after"))
    )
    return _RANK.format(source=source, neighbours=neighbours)


# The pages drive the join (their rowids come from _RANK): with the full-text table first, SQLite
# ran the whole match again for every page, four times slower.
_DRESS = f"""
SELECT {_HIT_COLUMNS}, snippet(pages_fts, 0, '', '', '…', 24) AS snippet, w.level AS mapped_level
FROM pages p
JOIN pages_fts ON pages_fts.rowid = p.rowid
{_MAPPED_IN_VIEWER}
WHERE p.rowid IN ({{marks}}) AND pages_fts MATCH ?
"""

_BY_ID = f"""
SELECT {_HIT_COLUMNS}, p.abstract AS snippet, w.level AS mapped_level
FROM pages p
{_MAPPED_IN_VIEWER}
WHERE p.namespace = ? AND p.page_id IN ({{marks}}) {{filters}}
"""

# Above any BM25 score, and still valid JSON (infinity is not).
EXACT_ID_SCORE = 1_000_000.0

DEFAULT_TUNING = SearchTuning()

# bm25() runs for every page a term is on, so in a large namespace a term on thousands of pages
# costs most of a search (40 ms at 100,000 pages) while it weighs least (its inverse document
# frequency is low). Such terms are left out of the ranking when the query has rarer ones; a query
# of common terms only asks for pages holding all of them first. Namespaces of up to this many
# pages, and queries without a common term, are ranked on every term as before.
COMMON_PAGES = 500
# Counted over the whole file, as FTS5 counts for BM25's inverse document frequency: walking only
# the full-text index, up to the threshold, costs a fraction of a millisecond per term.
_CAPPED_COUNT = "SELECT (SELECT count(*) FROM (SELECT 1 FROM pages_fts WHERE pages_fts MATCH ? LIMIT {cap}))"
# The pages of the namespace that hold every term, up to `cap` of them.
_CAPPED_IN_NAMESPACE = """
SELECT count(*) FROM (
    SELECT 1 FROM pages_fts CROSS JOIN pages p ON p.rowid = pages_fts.rowid
    WHERE pages_fts MATCH ? AND p.namespace = ? LIMIT {cap})"""


async def _ranking_match(conn: Reads, namespace: str, terms: list[str], total: int, limit: int) -> str:
    """The MATCH expression to rank with: every term, unless common terms make that slow (above)."""
    everything = match_expression(terms)
    if total <= COMMON_PAGES:
        return everything
    # One trip: each term's page count in the namespace, counted no further than the threshold.
    counts = await conn.all(
        " UNION ALL ".join([_CAPPED_COUNT.format(cap=COMMON_PAGES + 1)] * len(terms)),
        [match_expression([term]) for term in terms],
    )
    rare = [term for term, (count,) in zip(terms, counts, strict=True) if count <= COMMON_PAGES]
    if rare:
        return match_expression(rare)
    together = " AND ".join(match_expression([term]) for term in terms)
    # CROSS JOIN keeps the full-text index outermost; left to choose, SQLite walked the namespace's
    # pages and ran the match once for each of them (seconds at 100,000 pages).
    found = await conn.one(_CAPPED_IN_NAMESPACE.format(cap=limit), (together, namespace))
    return together if found and found[0] >= limit else everything


# The namespace's pages, and the file's.
_TOTAL = """SELECT coalesce((SELECT pages FROM page_counts WHERE namespace = ?), 0),
                  coalesce((SELECT sum(pages) FROM page_counts), 0)"""


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


# Pronouns that make a query about one side of the conversation (see SearchTuning.role_boost).
_FIRST_PERSON = frozenset(["i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"])
_SECOND_PERSON = frozenset(
    ["you", "your", "yours", "yourself", "yourselves", "you're", "you've", "you'd", "you'll"]
)
_WORD = re.compile(r"[a-z']+")


def addressed_role(query: str) -> Role | None:
    """The role a query asks about by its pronouns: the user for "my", the assistant for "you"."""
    words = set(_WORD.findall(query.lower().replace("\u2019", "'")))
    first, second = bool(words & _FIRST_PERSON), bool(words & _SECOND_PERSON)
    if first == second:
        return None
    return Role.USER if first else Role.ASSISTANT


def rescore(
    candidates: list[Row], terms: list[str], role: Role | None, tuning: SearchTuning
) -> dict[int, float]:
    """Each candidate's BM25 score with the bonuses of `tuning` (see SearchTuning for why each helps)."""
    bm25 = {row["rowid"]: float(row["score"]) for row in candidates}
    session_best: dict[str, float] = {}
    for row in candidates:
        session_best[row["session"]] = max(session_best.get(row["session"], 0.0), bm25[row["rowid"]])
    asked = set(terms)
    scores = {}
    for row in candidates:
        around = sum(
            tuning.neighbour_decay ** (step - 1)
            * (bm25.get(row[f"before{step}"], 0.0) + bm25.get(row[f"after{step}"], 0.0))
            for step in range(1, tuning.neighbour_reach + 1)
        )
        standalone = min(1.0, tuning.context_tokens / max(1, row["tokens_full"]))
        score = bm25[row["rowid"]] + tuning.neighbour_weight * standalone * around
        speaker = _TERM.findall((row["speaker"] or "").lower())
        if speaker and asked.issuperset(speaker):
            score *= 1 + tuning.speaker_boost
        if role is not None and row["role"] == role.value:
            score *= 1 + tuning.role_boost
        scores[row["rowid"]] = score + tuning.session_weight * session_best[row["session"]]
    return scores


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
    conn: Reads,
    *,
    namespace: str,
    viewer_session: str,
    query: str,
    limit: int,
    page_type: PageType | None = None,
    modality: Modality | None = None,
    only_session: str | None = None,
    tuning: SearchTuning = DEFAULT_TUNING,
) -> SearchResult:
    """The `limit` best pages for `query`: an exact page id first, then by score.

    `score` is higher for better matches: BM25 (negated, so higher is better) with the bonuses of
    `tuning` (neighbours, speaker, role, session); an exact id match scores EXACT_ID_SCORE.
    """
    filters, filter_params = _filters(page_type, modality, only_session)
    hits: list[SearchHit] = []
    candidates = _id_candidates(query)
    if candidates:
        marks = ", ".join("?" for _ in candidates)
        rows = await conn.all(
            _BY_ID.format(marks=marks, filters=filters),
            (viewer_session, namespace, *candidates, *filter_params),
        )
        order = {page_id: i for i, page_id in enumerate(candidates)}
        for row in sorted(rows, key=lambda r: order[r["page_id"]]):
            hits.append(_hit(row, score=EXACT_ID_SCORE))
    terms = query_terms(query)
    counts = await conn.one(_TOTAL, (namespace,))
    total, in_file = (int(counts[0]), int(counts[1])) if counts else (0, 0)
    if terms and len(hits) < limit:
        match = await _ranking_match(conn, namespace, terms, total, limit)
        depth = max(tuning.depth, limit)
        if filters or total != in_file:
            source = _IN_NAMESPACE.format(filters=filters)
            params: tuple[object, ...] = (match, namespace, *filter_params, depth, namespace)
        else:
            source, params = _WHOLE_FILE, (match, depth, namespace)
        matches = await conn.all(_rank_sql(source, tuning.neighbour_reach), params)
        scores = rescore(matches, terms, addressed_role(query), tuning)
        seen = {hit.page_id for hit in hits}
        best = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))[: limit + len(hits)]
        if best:
            rows = await conn.all(
                _DRESS.format(marks=", ".join("?" * len(best))), (viewer_session, *best, match)
            )
            by_rowid = {row["rowid"]: row for row in rows}
            for rowid in best:
                row = by_rowid[rowid]
                if row["page_id"] not in seen:
                    hits.append(_hit(row, score=round(scores[rowid], 6)))
    return SearchResult(results=hits[:limit], total_pages=total)
