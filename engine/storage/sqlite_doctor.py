"""What `memvm doctor` checks of a SQLite file itself, before the memory in it: its size, pages
and journal, SQLite's integrity check, that the file is memvm's, and the FTS5 index.

It reads through the database's own transactions, so serving processes go on writing; the file is
never changed (FTS5's own check is phrased as a write, and writes nothing).
"""

import sqlite3
from pathlib import Path
from typing import Any

import anyio
from memvm.engine.errors import DatabaseRefused, StorageReadOnly
from memvm.engine.storage.api import Database, Reads, StorageReport
from memvm.engine.storage.sqlite_file import APPLICATION_ID, wal_in_header

_READ_ONLY_SKIP = "ok (structure check skipped: read-only file)"


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


async def _one(conn: Reads, sql: str) -> Any:
    row = await conn.one(sql)
    return row[0] if row else None


def _sizes(path: Path) -> tuple[int, int, bool]:
    """The file's bytes, its WAL's, and whether its header marks it a WAL database."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size, wal.stat().st_size if wal.exists() else 0, wal_in_header(path)


async def file_report(db: Database) -> StorageReport:
    """The file's facts and checks; a file SQLite cannot read is one problem, and unreadable."""
    path = Path(db.path)
    file_bytes, wal_bytes, wal_header = await anyio.to_thread.run_sync(_sizes, path)
    facts: dict[str, Any] = {
        "sqlite_version": sqlite3.sqlite_version,
        "journal_mode": "",
        "file_bytes": file_bytes,
        "wal_bytes": wal_bytes,
        "page_size": 0,
        "page_count": 0,
        "free_pages": 0,
    }
    report = StorageReport(engine=f"SQLite {sqlite3.sqlite_version}", size="", facts=facts)
    try:
        async with db.read(None) as conn:
            await _file_checks(conn, wal_header, report)
    except sqlite3.DatabaseError as exc:
        report.problems.append(f"not a usable SQLite database ({exc})")
        report.readable = False
    except DatabaseRefused as exc:  # a reader's connection, refused as not a usable database
        report.problems.append(str(exc))
        report.readable = False
    report.size = (
        f"{_mib(facts['file_bytes'])} file, {_mib(facts['wal_bytes'])} WAL, {facts['page_count']} pages of "
        f"{facts['page_size']} B ({facts['free_pages']} free), journal {facts['journal_mode']}"
    )
    return report


async def _file_checks(conn: Reads, wal_header: bool, report: StorageReport) -> None:
    facts = report.facts
    facts["journal_mode"] = str(await _one(conn, "PRAGMA journal_mode"))
    if facts["journal_mode"] != "wal" and wal_header:
        facts["journal_mode"] = "wal"  # opened immutable, where SQLite reports "delete"
    facts["page_size"] = int(await _one(conn, "PRAGMA page_size") or 0)
    facts["page_count"] = int(await _one(conn, "PRAGMA page_count") or 0)
    facts["free_pages"] = int(await _one(conn, "PRAGMA freelist_count") or 0)
    verdict = [row[0] for row in await conn.all("PRAGMA integrity_check(20)")]
    report.checks["integrity"] = "ok" if verdict == ["ok"] else "failed"
    if verdict != ["ok"]:
        report.problems.append(f"integrity_check failed: {'; '.join(verdict[:3])}")
    app_id = await _one(conn, "PRAGMA application_id")
    objects = await _one(conn, "SELECT count(*) FROM sqlite_schema")
    if app_id == APPLICATION_ID or (app_id == 0 and objects == 0):
        report.checks["owner"] = "ok"
    else:
        report.checks["owner"] = "foreign"
        report.problems.append("the file is a SQLite database of another program, not a memvm database")
    if facts["journal_mode"] != "wal" and objects:
        report.problems.append(f"journal mode is {facts['journal_mode']}, not wal; serve it once to switch")
    report.readable = verdict == ["ok"] and report.checks["owner"] == "ok"


async def search_index_verdict(db: Database) -> str:
    """Whether the FTS5 index holds every page and nothing else, and passes FTS5's own check."""
    # The index holds its content elsewhere (content='page_search', a view over the pages and their
    # texts), so FTS5's own check sees only itself on this SQLite; that every page is indexed, and
    # nothing else, is checked here.
    async with db.read(None) as conn:
        missing = await _one(
            conn, "SELECT count(*) FROM pages WHERE rowid NOT IN (SELECT id FROM pages_fts_docsize)"
        )
        stray = await _one(
            conn, "SELECT count(*) FROM pages_fts_docsize WHERE id NOT IN (SELECT rowid FROM pages)"
        )
    if missing or stray:
        return f"{missing} pages unindexed, {stray} stray entries"
    # FTS5 phrases its check as a write, so it needs the write lock, held only for the check;
    # servers' writes wait and retry. It writes nothing, so committing it commits nothing.
    try:
        async with db.write() as conn:
            await conn.execute("INSERT INTO pages_fts (pages_fts) VALUES ('integrity-check')")
    except StorageReadOnly:
        # A read-only file (mode=ro refuses the lock, an immutable open the write).
        return _READ_ONLY_SKIP
    except sqlite3.DatabaseError:
        return "FTS5 integrity-check failed"
    return "ok"
