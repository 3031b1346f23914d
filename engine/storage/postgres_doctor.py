"""What `memvm doctor` checks of a PostgreSQL database itself, before the memory in it: the
server's version, the database's size, indexes left invalid, and the search postings recounted
for a sample of pages with the tokenizer the engine's writes use.

It reads inside one REPEATABLE READ transaction, so serving processes go on writing.
"""

import anyio
from memvm.engine.storage.api import Database, StorageReport
from memvm.engine.storage.statements import template
from memvm.engine.storage.tokenizer import Stemmer

# Pages whose postings doctor recounts with the tokenizer, chosen at random each run.
_SAMPLED_PAGES = 200

_INVALID_INDEXES = (
    "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
    "AND NOT (i.indisvalid AND i.indisready)"
)
_UNINDEXED = (
    "SELECT count(*) FROM page_search s WHERE NOT EXISTS "
    "(SELECT 1 FROM page_terms t WHERE t.page_rowid = s.rowid) AND s.content ~ '[[:alnum:]]'"
)
_SAMPLE = (
    f"SELECT rowid, content, speaker, search_key FROM page_search ORDER BY random() LIMIT {_SAMPLED_PAGES}"
)
_STORED_TERMS = template(
    "postgres_doctor.stored terms",
    "SELECT page_rowid, stem, tf FROM page_terms WHERE page_rowid IN ({marks})",
    backend="postgresql",
    marks=":in0",
)


async def server_report(db: Database) -> StorageReport:
    """The server's version, the database's size, and whether its indexes are all valid."""
    async with db.read(None) as conn:
        version = (await conn.one("SHOW server_version"))[0]  # type: ignore[index]
        size = int((await conn.one("SELECT pg_database_size(current_database())"))[0])  # type: ignore[index]
        invalid = int((await conn.one(_INVALID_INDEXES))[0])  # type: ignore[index]
    report = StorageReport(
        engine=f"PostgreSQL {version}",
        size=f"{size / 2**20:.1f} MiB database",
        facts={"server_version": str(version), "database_bytes": size},
    )
    report.checks["indexes"] = "ok" if invalid == 0 else f"{invalid} invalid"
    if invalid:
        report.problems.append(f"{invalid} indexes are invalid (an interrupted CREATE INDEX?); REINDEX them")
    return report


async def search_index_verdict(db: Database) -> str:
    """Whether every page with words has postings, and a sample's postings are its stems' counts."""
    async with db.read(None) as conn:
        unindexed = int((await conn.one(_UNINDEXED))[0])  # type: ignore[index]
        sample = await conn.all(_SAMPLE)
        rowids = [int(row[0]) for row in sample]
        stored_rows = await conn.all_in(_STORED_TERMS, rowids)
    texts = [(int(row[0]), str(row[1]), row[2], row[3]) for row in sample]
    expected = sorted(await anyio.to_thread.run_sync(_recount, texts))
    stored = sorted((int(r[0]), str(r[1]), int(r[2])) for r in stored_rows)
    miscounted = len({rowid for rowid, _, _ in set(expected) ^ set(stored)})
    if unindexed or miscounted:
        return f"{unindexed} pages unindexed, {miscounted} of {len(sample)} sampled pages miscounted"
    return f"ok ({len(sample)} pages recounted)"


def _recount(texts: list[tuple[int, str, str | None, str | None]]) -> list[tuple[int, str, int]]:
    stemmer = Stemmer()
    try:
        return stemmer.frequencies(texts)
    finally:
        stemmer.close()
