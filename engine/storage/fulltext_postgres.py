"""The PostgreSQL full-text index, read for BM25: which pages hold a query's terms, and how often.

PostgreSQL's own text search ranks with ts_rank, which is not BM25 and lost recall; and its
stemmer is not FTS5's. So the index is a postings table, `page_terms` (namespace, stem, page, tf),
filled when a page is written with FTS5's own tokenizer (postgres_postings.py). It
answers the same questions as fulltext_sqlite, with the same counts, so search computes the
same BM25 from them. Every row carries its namespace and the key leads with it: a tenant's query
reads only its own postings.
"""

from memvm.engine.storage.api import Reads
from memvm.engine.storage.fulltext import Candidates, Posting
from memvm.engine.storage.tokenizer import Stemmer

_POSTINGS = """
SELECT t.page_rowid AS rowid, t.stem, t.tf, p.search_chars AS chars, p.type, p.modality, p.session, p.pinned, p.project
FROM page_terms t JOIN pages p ON p.rowid = t.page_rowid
WHERE t.namespace = ? AND t.stem IN ({marks})
"""
# Pages holding a stem, counted no further than `cap`: the key's order lets it stop there.
_CAPPED = "SELECT count(*) FROM (SELECT 1 FROM page_terms WHERE namespace = ? AND stem = ? LIMIT {cap}) AS c"


def _holding_all_sql(count: int) -> str:
    """Pages holding every one of `count` stems: one join per further stem, each stem's postings
    in page order under the key, so the planner can merge them or probe the key."""
    joins = "".join(
        f" JOIN page_terms t{n} ON t{n}.namespace = t0.namespace AND t{n}.page_rowid = t0.page_rowid"
        f" AND t{n}.stem = ?"
        for n in range(1, count)
    )
    return f"SELECT t0.page_rowid FROM page_terms t0{joins} WHERE t0.namespace = ? AND t0.stem = ?"


async def capped_counts(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, whole_file: bool, cap: int
) -> list[int]:
    """Each term's page count in the namespace, counted no further than `cap`, in one trip."""
    each = stemmer.stem_each(terms)
    selects: list[str] = []
    params: list[object] = []
    for term in terms:
        stems = list(dict.fromkeys(each[term]))
        if not stems:
            selects.append("SELECT 0")
        elif len(stems) == 1:
            selects.append(f"SELECT ({_CAPPED.format(cap=int(cap))})")
            params += [namespace, stems[0]]
        else:  # a term the tokenizer splits: the pages holding all of its pieces
            selects.append(
                f"SELECT (SELECT count(*) FROM ({_holding_all_sql(len(stems))} LIMIT {int(cap)}) AS c)"
            )
            params += [*stems[1:], namespace, stems[0]]
    rows = await conn.all(" UNION ALL ".join(f"({select})" for select in selects), params)
    return [int(row[0]) for row in rows]


def _stems_of(stemmer: Stemmer, terms: list[str]) -> list[str]:
    return list(dict.fromkeys(stem for term in terms for stem in stemmer.stem_each([term])[term]))


async def newest_counts(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, cap: int, whole_file: bool
) -> list[tuple[int, int | None]]:
    """Each term's page count in the namespace counted no further than `cap`, and, when it
    reaches `cap`, the oldest of the newest `cap` pages holding it; in one trip."""
    selects: list[str] = []
    params: list[object] = []
    for term in terms:
        stems = _stems_of(stemmer, [term])
        if not stems:
            selects.append("SELECT 0, NULL::bigint")
            continue
        selects.append(
            f"SELECT count(*), min(page_rowid) FROM ({_holding_all_sql(len(stems))}"
            f" ORDER BY t0.page_rowid DESC LIMIT {int(cap)}) AS c"
        )
        params += [*stems[1:], namespace, stems[0]]
    rows = await conn.all(" UNION ALL ".join(f"({select})" for select in selects), params)
    return [(int(row[0]), int(row[1]) if int(row[0]) >= cap else None) for row in rows]


async def newest_holding(
    conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, count: int
) -> list[Posting]:
    """The namespace's newest `count` pages holding every one of `terms`, as postings without a
    stem: (rowid, chars, type, modality, session, pinned, project)."""
    stems = _stems_of(stemmer, terms)
    if not stems:
        return []
    sql = (
        "SELECT p.rowid, p.search_chars AS chars, p.type, p.modality, p.session, p.pinned, p.project FROM pages p"
        f" JOIN ({_holding_all_sql(len(stems))} ORDER BY t0.page_rowid DESC LIMIT {int(count)}) AS n"
        " ON n.page_rowid = p.rowid ORDER BY p.rowid DESC"
    )
    return [dict(row) for row in await conn.all(sql, (*stems[1:], namespace, stems[0]))]


async def holding_among(
    conn: Reads, namespace: str, term: str, stemmer: Stemmer, among: Candidates
) -> set[int]:
    """Which of the pages `among` hold `term`: looked up page by page under the key."""
    stems = _stems_of(stemmer, [term])
    if not stems or not among.rowids:
        return set()
    sql = _holding_all_sql(len(stems)) + " AND t0.page_rowid IN ({marks})"
    rows = await conn.all_in(sql, (*stems[1:], namespace, stems[0]), among.rowids)
    return {int(row[0]) for row in rows}


async def postings(
    conn: Reads, namespace: str, terms: list[str], stems: list[str], stemmer: Stemmer, *, whole_file: bool
) -> list[Posting]:
    """One posting (rowid, stem, tf, chars, type, modality, session, pinned, project) per page and stem."""
    if not stems:
        return []
    sql = _POSTINGS.format(marks=", ".join("?" * len(stems)))
    return [dict(row) for row in await conn.all(sql, (namespace, *stems))]
