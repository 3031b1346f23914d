"""The PostgreSQL full-text index, read for BM25: which pages hold a query's terms, and how often.

PostgreSQL's own text search ranks with ts_rank, which is not BM25 and lost recall; and its
stemmer is not FTS5's. So the index is a postings table, `page_terms` (namespace, stem, page, tf),
filled when a page is written with FTS5's own tokenizer (postgres_postings.py). It
answers the same questions as fulltext_sqlite, with the same counts, so search computes the
same BM25 from them. Every row carries its namespace and the key leads with it: a tenant's query
reads only its own postings.
"""

from collections.abc import Sequence
from typing import Any

from memvm.engine.storage.api import Reads
from memvm.engine.storage.fulltext import Candidates, Posting
from memvm.engine.storage.statements import in_list, template
from memvm.engine.storage.tokenizer import Stemmer

# A query's pages holding its stems are found by one statement composed per query, as SQL the
# engine writes from the number of stems and terms (never from input): a template whose one slot
# is that SQL. The examples are what a two-term query composes.

_POSTINGS = template(
    "fulltext_postgres.postings",
    """
SELECT t.page_rowid AS rowid, t.stem, t.tf, p.search_chars AS chars, p.type, p.modality, p.session, p.pinned, p.project
FROM page_terms t JOIN pages p ON p.rowid = t.page_rowid
WHERE t.namespace = :namespace AND t.stem IN ({marks})
""",
    backend="postgresql",
    marks=":in0, :in1",
)


def _holding_all_sql(names: Sequence[str]) -> str:
    """Pages holding every stem the parameters `names` hold: one join per further stem, each
    stem's postings in page order under the key, so the planner can merge them or probe the key."""
    joins = "".join(
        f" JOIN page_terms t{n} ON t{n}.namespace = t0.namespace AND t{n}.page_rowid = t0.page_rowid"
        f" AND t{n}.stem = :{name}"
        for n, name in enumerate(names[1:], start=1)
    )
    return f"SELECT t0.page_rowid FROM page_terms t0{joins} WHERE t0.namespace = :namespace AND t0.stem = :{names[0]}"


def _named_stems(stems: Sequence[str], prefix: str) -> tuple[list[str], dict[str, Any]]:
    names = [f"{prefix}_{n}" for n in range(len(stems))]
    return names, dict(zip(names, stems, strict=True))


def _capped_select(names: Sequence[str], cap: int) -> str:
    """One term's page count, counted no further than `cap`: the key's order lets it stop there."""
    if not names:
        return "SELECT 0"
    if len(names) == 1:
        return (
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM page_terms WHERE namespace = :namespace "
            f"AND stem = :{names[0]} LIMIT {int(cap)}) AS c)"
        )
    # A term the tokenizer splits: the pages holding all of its pieces.
    return f"SELECT (SELECT count(*) FROM ({_holding_all_sql(names)} LIMIT {int(cap)}) AS c)"


def _newest_select(names: Sequence[str], cap: int) -> str:
    """One term's newest `cap` pages: how many, and the oldest of them."""
    if not names:
        return "SELECT 0, NULL::bigint"
    return (
        f"SELECT count(*), min(page_rowid) FROM ({_holding_all_sql(names)}"
        f" ORDER BY t0.page_rowid DESC LIMIT {int(cap)}) AS c"
    )


def _union(selects: Sequence[str]) -> str:
    return " UNION ALL ".join(f"({select})" for select in selects)


_CAPPED_COUNTS = template(
    "fulltext_postgres.capped counts",
    "{selects}",
    backend="postgresql",
    selects=_union([_capped_select(["a_0"], 100), _capped_select(["b_0", "b_1"], 100)]),
)
_NEWEST_COUNTS = template(
    "fulltext_postgres.newest counts",
    "{selects}",
    backend="postgresql",
    selects=_union([_newest_select(["a_0"], 100), _newest_select([], 100)]),
)
_NEWEST_HOLDING = template(
    "fulltext_postgres.newest holding",
    "SELECT p.rowid, p.search_chars AS chars, p.type, p.modality, p.session, p.pinned, p.project FROM pages p"
    " JOIN ({holding} ORDER BY t0.page_rowid DESC LIMIT {count}) AS n ON n.page_rowid = p.rowid"
    " ORDER BY p.rowid DESC",
    backend="postgresql",
    holding=_holding_all_sql(["s_0", "s_1"]),
    count="10",
)
_HOLDING_AMONG = template(
    "fulltext_postgres.holding among",
    "{holding} AND t0.page_rowid IN ({marks})",
    backend="postgresql",
    holding=_holding_all_sql(["s_0"]),
    marks=":in0",
)


async def capped_counts(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, whole_file: bool, cap: int
) -> list[int]:
    """Each term's page count in the namespace, counted no further than `cap`, in one trip."""
    each = stemmer.stem_each(terms)
    selects: list[str] = []
    params: dict[str, Any] = {"namespace": namespace}
    for index, term in enumerate(terms):
        names, named = _named_stems(list(dict.fromkeys(each[term])), f"t{index}")
        selects.append(_capped_select(names, cap))
        params |= named
    rows = await conn.all(_CAPPED_COUNTS.fill(selects=_union(selects)), **params)
    return [int(row[0]) for row in rows]


def _stems_of(stemmer: Stemmer, terms: list[str]) -> list[str]:
    return list(dict.fromkeys(stem for term in terms for stem in stemmer.stem_each([term])[term]))


async def newest_counts(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, cap: int, whole_file: bool
) -> list[tuple[int, int | None]]:
    """Each term's page count in the namespace counted no further than `cap`, and, when it
    reaches `cap`, the oldest of the newest `cap` pages holding it; in one trip."""
    selects: list[str] = []
    params: dict[str, Any] = {"namespace": namespace}
    for index, term in enumerate(terms):
        names, named = _named_stems(_stems_of(stemmer, [term]), f"t{index}")
        selects.append(_newest_select(names, cap))
        params |= named
    rows = await conn.all(_NEWEST_COUNTS.fill(selects=_union(selects)), **params)
    return [(int(row[0]), int(row[1]) if int(row[0]) >= cap else None) for row in rows]


async def newest_holding(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, count: int
) -> list[Posting]:
    """The namespace's newest `count` pages holding every one of `terms`, as postings without a
    stem: (rowid, chars, type, modality, session, pinned, project)."""
    stems = _stems_of(stemmer, terms)
    if not stems:
        return []
    names, named = _named_stems(stems, "s")
    sql = _NEWEST_HOLDING.fill(holding=_holding_all_sql(names), count=str(int(count)))
    return [dict(row) for row in await conn.all(sql, namespace=namespace, **named)]


async def holding_among(
    conn: Reads, namespace: str, term: str, stemmer: Stemmer, among: Candidates
) -> set[int]:
    """Which of the pages `among` hold `term`: looked up page by page under the key."""
    stems = _stems_of(stemmer, [term])
    if not stems or not among.rowids:
        return set()
    names, named = _named_stems(stems, "s")
    parts = {"holding": _holding_all_sql(names)}
    rows = await conn.all_in(_HOLDING_AMONG, among.rowids, parts, namespace=namespace, **named)
    return {int(row[0]) for row in rows}


async def postings(
    conn: Reads, namespace: str, terms: list[str], stems: list[str], stemmer: Stemmer, *, whole_file: bool
) -> list[Posting]:
    """One posting (rowid, stem, tf, chars, type, modality, session, pinned, project) per page and stem."""
    if not stems:
        return []
    marks, named = in_list(stems, prefix="stem")
    return [dict(row) for row in await conn.all(_POSTINGS.fill(marks=marks), namespace=namespace, **named)]
