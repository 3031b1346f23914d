"""`memvm export`, `import` and `doctor` on a PostgreSQL database.

The export is the SQLite export's format, line for line: the same tables in name order, the same
stored columns in the same order, rows in primary-key order, numbers as Python reads them back. So
an export taken from either backend imports into the other, and exporting that again gives the same
bytes.

An import goes through a SQLite file first: the file is loaded into a private temporary database
by the SQLite import (every rule it holds rows to, every upgrade of older exports), and only what
passed is copied into PostgreSQL, in one transaction holding the lock every write shares, into a
database that holds no memory yet: all of it or nothing. The search index and the page counts are
then rebuilt there, as on SQLite, and identity counters moved past the copied rows.
"""

import sqlite3
import tempfile
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from memvm.engine.hosts.hook_report import hook_sessions, stopped
from memvm.engine.operations import transfer
from memvm.engine.operations.doctor import (
    COUNTS_DRIFT,
    Findings,
    expired_waiting_sql,
    memory_line,
    record_counts_drift,
)
from memvm.engine.operations.transfer import Table, TransferError
from memvm.engine.storage.migrations import SCHEMA_VERSION
from memvm.engine.storage.open import shown
from memvm.engine.storage.postgres_db import _LOCK_CLASS, _first_line
from memvm.engine.storage.postgres_postings import INSERT_TERMS, SEARCHED_TEXTS, SET_SEARCH_CHARS, index_rows
from memvm.engine.storage.postgres_sql import translate
from memvm.engine.storage.tokenizer import Stemmer

# Kept by the engine or by triggers from the pages: never exported, never imported.
_DERIVED = {"page_counts", "schema_migrations", "guard_verdicts", "page_terms", "purge_owed"}
# Identity columns, moved past the imported rows so the next insert does not collide.
_IDENTITIES = {
    "pages": "rowid",
    "mutation_log": "seq",
    "bindings": "rowid",
    "guard_calls": "rowid",
    "tool_calls": "rowid",
}
_INDEX_BATCH = 500


def connect(url: str) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise TransferError(f"cannot connect to PostgreSQL at {shown(url)}: {_first_line(exc)}") from exc


# Every stored column of every table (generated ones excluded), with its place in its table's
# primary key (none when it has none), in the order SQLite lists them (transfer.MEMORY_COLUMNS).
MEMORY_COLUMNS = """
SELECT c.table_name, c.column_name, k.place
FROM information_schema.columns AS c
JOIN pg_tables AS t ON t.schemaname = c.table_schema AND t.tablename = c.table_name
LEFT JOIN (
    -- int2vector counts from 0
    SELECT r.relname, a.attname, array_position(i.indkey, a.attnum) - array_lower(i.indkey, 1) + 1 AS place
    FROM pg_index AS i
    JOIN pg_class AS r ON r.oid = i.indrelid
    JOIN pg_namespace AS n ON n.oid = r.relnamespace AND n.nspname = current_schema()
    JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
    WHERE i.indisprimary
) AS k ON k.relname = c.table_name AND k.attname = c.column_name
WHERE c.table_schema = current_schema() AND c.is_generated = 'NEVER'
ORDER BY t.tablename COLLATE "C", c.ordinal_position
"""


def derived(name: str) -> bool:
    """Whether the table is kept by the engine or by triggers (never exported)."""
    return name in _DERIVED


def memory_tables(conn: psycopg.Connection[Any]) -> list[Table]:
    """The tables that hold memory, with their stored columns (generated ones excluded), in the
    order SQLite lists them, and their primary keys."""
    return transfer.tables_from(conn.execute(MEMORY_COLUMNS), derived)


def _schema_version(conn: psycopg.Connection[Any]) -> int | None:
    ledger = conn.execute(
        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'"
    ).fetchone()
    if not ledger or not ledger[0]:
        return None
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0]) if row and row[0] is not None else None


def _check_schema(conn: psycopg.Connection[Any]) -> None:
    version = _schema_version(conn)
    if version is None:
        raise TransferError("the database holds no memvm schema; serve it once with this memvm first")
    if version != SCHEMA_VERSION:
        raise TransferError(
            f"the database is at schema {version}, this memvm at {SCHEMA_VERSION}; serve it once with this memvm first"
        )


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def expired_pages(url: str) -> int:
    """How many pages have expired and wait to be deleted: an export deletes them first."""
    with connect(url) as conn:
        _check_schema(conn)
        row = conn.execute(
            "SELECT count(*) FROM pages WHERE expires_at IS NOT NULL AND expires_at <= %s", (time.time(),)
        ).fetchone()
    return int(row[0]) if row else 0


def export_lines(url: str, namespace: str | None = None) -> Generator[str, None, None]:
    """The export, line by line, from one snapshot (REPEATABLE READ): one moment's memory."""
    with connect(url) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            _check_schema(conn)
            yield transfer.header_line()
            rows = 0
            for table in memory_tables(conn):
                sql, params = transfer.rows_sql(table, namespace, mark="%s")
                with conn.cursor(name=f"export_{table.name}") as cursor:  # server-side: memory stays flat
                    cursor.itersize = 2000
                    cursor.execute(sql, params)
                    for values in cursor:
                        yield transfer.row_line(table, values)
                        rows += 1
            yield transfer.end_line(rows)
        finally:
            conn.execute("ROLLBACK")


def import_lines(url: str, lines: Iterable[str]) -> int:
    """Insert an export into a migrated PostgreSQL database that holds no memory; returns the rows."""
    with tempfile.TemporaryDirectory(prefix="memvm-import-") as folder:
        staged = Path(folder) / "staged.db"
        _stage(staged, lines)
        source = sqlite3.connect(staged, isolation_level=None)
        try:
            with connect(url) as conn:
                return _copy(source, conn)
        finally:
            source.close()


def _stage(path: Path, lines: Iterable[str]) -> None:
    """Load the export into a new SQLite file with the SQLite import: every check it makes."""
    import anyio
    from memvm.engine import Engine

    async def create() -> None:
        engine = await Engine.open(path)
        await engine.close()

    anyio.run(create)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        transfer.import_from(conn, lines)
    finally:
        conn.close()


def _copy(source: sqlite3.Connection, conn: psycopg.Connection[Any]) -> int:
    conn.execute("BEGIN")
    try:
        conn.execute(f"SELECT pg_advisory_xact_lock({_LOCK_CLASS}, 0)")
        _check_schema(conn)
        tables = memory_tables(conn)
        occupied = [t.name for t in tables if conn.execute(f'SELECT 1 FROM "{t.name}" LIMIT 1').fetchone()]
        if occupied:
            raise TransferError(
                f"the database already holds memory ({occupied[0]}); import into a new database instead"
            )
        conn.execute("SET CONSTRAINTS ALL DEFERRED")
        rows = 0
        for table in _in_key_order(tables):
            select = f'SELECT {_quoted(table.columns)} FROM "{table.name}" ORDER BY {_quoted(table.key)}'
            insert = f'COPY "{table.name}" ({_quoted(table.columns)}) FROM STDIN'
            with conn.cursor() as cursor, cursor.copy(insert) as copy:
                for values in source.execute(select):
                    copy.write_row(values)
                    rows += 1
        for name, column in _IDENTITIES.items():
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{name}', '{column}'), "
                f"coalesce((SELECT max({column}) FROM {name}), 0) + 1, false)"
            )
        _rebuild_index(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return rows


def _in_key_order(tables: list[Table]) -> list[Table]:
    # Foreign keys are deferred to the commit, but the count triggers read sessions when pages
    # arrive; the order the schema was built in is the order rows can arrive in.
    first = ["sessions", "pages", "page_texts", "bindings", "tool_calls"]
    return sorted(tables, key=lambda t: (first.index(t.name) if t.name in first else len(first), t.name))


def _rebuild_index(conn: psycopg.Connection[Any]) -> None:
    """The postings and search lengths of every page, as the engine's writes index them."""
    stemmer = Stemmer()
    try:
        with conn.cursor(name="index_pages") as pages:
            pages.itersize = _INDEX_BATCH
            pages.execute(SEARCHED_TEXTS)
            while batch := pages.fetchmany(_INDEX_BATCH):
                lengths, terms = index_rows(batch, stemmer)
                with conn.cursor() as writer:
                    for sql, rows in ((SET_SEARCH_CHARS, lengths), (INSERT_TERMS, terms)):
                        text, order = translate(sql)
                        writer.executemany(text, [{f"p{i + 1}": row[i] for i in order} for row in rows])
    finally:
        stemmer.close()


@dataclass
class PgDiagnosis(Findings):
    """What `memvm doctor` finds in a PostgreSQL database."""

    server_version: str = ""
    database_bytes: int = 0


# Pages whose postings doctor recounts with the tokenizer, chosen at random each run.
_SAMPLED_PAGES = 200


def diagnose(url: str) -> PgDiagnosis:
    """Check the database at `url`: schema version, counts, search statistics, search index."""
    found = PgDiagnosis(path=shown(url))
    with connect(url) as conn:
        found.server_version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
        found.database_bytes = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])  # type: ignore[index]
        version = _schema_version(conn)
        if version is None:
            found.problems.append("the database holds no memvm schema yet; serve it once to create it")
            return found
        found.schema_version = version
        if version != SCHEMA_VERSION:
            found.problems.append(
                f"schema version {version}, this memvm expects {SCHEMA_VERSION}"
                + ("; serve it once to migrate" if version < SCHEMA_VERSION else "")
            )
            return found
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            _counts(conn, found)
            _search_checks(conn, found)
            found.hook_sessions, found.hooks_guard_failed_open = hook_sessions(conn, url)
        finally:
            conn.execute("ROLLBACK")
    for entry in found.hook_sessions:
        if stopped(entry):
            found.problems.append(
                f"hook capture for {entry.host} session {entry.session or '(unknown)'} stopped: the last "
                f"{entry.skipped_since_write} events were skipped ({entry.last_skip_reason})"
            )
    return found


def _one(conn: psycopg.Connection[Any], sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return row[0] if row else None


def _counts(conn: psycopg.Connection[Any], found: PgDiagnosis) -> None:
    found.namespaces = int(_one(conn, "SELECT count(DISTINCT namespace) FROM sessions"))
    found.sessions = int(_one(conn, "SELECT count(*) FROM sessions"))
    found.pages = int(_one(conn, "SELECT count(*) FROM pages"))
    found.tool_calls = int(_one(conn, "SELECT count(*) FROM tool_calls"))
    found.expired_waiting = int(_one(conn, expired_waiting_sql()))
    record_counts_drift(found, int(_one(conn, COUNTS_DRIFT)))
    invalid = int(
        _one(
            conn,
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND NOT (i.indisvalid AND i.indisready)",
        )
    )
    found.checks["indexes"] = "ok" if invalid == 0 else f"{invalid} invalid"
    if invalid:
        found.problems.append(f"{invalid} indexes are invalid (an interrupted CREATE INDEX?); REINDEX them")


def _search_checks(conn: psycopg.Connection[Any], found: PgDiagnosis) -> None:
    unindexed = int(
        _one(
            conn,
            "SELECT count(*) FROM page_search s WHERE NOT EXISTS "
            "(SELECT 1 FROM page_terms t WHERE t.page_rowid = s.rowid) AND s.content ~ '[[:alnum:]]'",
        )
    )
    sample = conn.execute(
        f"SELECT rowid, content, speaker, search_key FROM page_search ORDER BY random() LIMIT {_SAMPLED_PAGES}"
    ).fetchall()
    stemmer = Stemmer()
    try:
        expected = sorted(stemmer.frequencies([(int(r[0]), r[1], r[2], r[3]) for r in sample]))
    finally:
        stemmer.close()
    stored: list[tuple[int, str, int]] = []
    if sample:
        stored = sorted(
            (int(r[0]), str(r[1]), int(r[2]))
            for r in conn.execute(
                "SELECT page_rowid, stem, tf FROM page_terms WHERE page_rowid = ANY(%s)",
                ([int(r[0]) for r in sample],),
            )
        )
    miscounted = len({rowid for rowid, _, _ in set(expected) ^ set(stored)})
    if unindexed or miscounted:
        verdict = f"{unindexed} pages unindexed, {miscounted} of {len(sample)} sampled pages miscounted"
        found.checks["search_index"] = verdict
        found.problems.append(f"the search index disagrees with the pages ({verdict})")
    else:
        found.checks["search_index"] = f"ok ({len(sample)} pages recounted)"


def report_lines(found: PgDiagnosis, memvm_version: str, hook_lines: list[str]) -> list[str]:
    lines = [
        f"database    {found.path}",
        f"versions    memvm {memvm_version}, PostgreSQL {found.server_version}, "
        f"schema {found.schema_version} (this memvm: {found.schema_expected})",
        f"size        {found.database_bytes / 2**20:.1f} MiB database",
        memory_line(found),
        "checks      " + ", ".join(f"{name} {verdict}" for name, verdict in found.checks.items()),
    ]
    lines += hook_lines
    lines += [f"problem     {problem}" for problem in found.problems]
    lines.append("healthy" if found.healthy else f"{len(found.problems)} problem(s) found")
    return lines
