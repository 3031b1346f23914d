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
from memvm.engine.operations.transfer import FORMAT, FORMAT_VERSION, Table, TransferError
from memvm.engine.storage.migrations import SCHEMA_VERSION
from memvm.engine.storage.open import shown
from memvm.engine.storage.postgres_db import (
    _LOCK_CLASS,
    INSERT_TERMS,
    SEARCHED_TEXTS,
    SET_SEARCH_CHARS,
    _first_line,
    index_rows,
)
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


def memory_tables(conn: psycopg.Connection[Any]) -> list[Table]:
    """The tables that hold memory, with their stored columns (generated ones excluded), in the
    order SQLite lists them, and their primary keys."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            'ORDER BY tablename COLLATE "C"'
        )
        if row[0] not in _DERIVED
    ]
    tables = []
    for name in names:
        columns = tuple(
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s AND is_generated = 'NEVER' ORDER BY ordinal_position",
                (name,),
            )
        )
        key = tuple(
            row[0]
            for row in conn.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = CAST(%s AS regclass) AND i.indisprimary "
                "ORDER BY array_position(i.indkey, a.attnum)",
                (name,),
            )
        )
        tables.append(Table(name, columns, key))
    return tables


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
            yield transfer._dump({"format": FORMAT, "version": FORMAT_VERSION, "schema": SCHEMA_VERSION})
            rows = 0
            for table in memory_tables(conn):
                where, params = ("WHERE namespace = %s", (namespace,)) if namespace is not None else ("", ())
                sql = f'SELECT {_quoted(table.columns)} FROM "{table.name}" {where} ORDER BY {_quoted(table.key)}'
                with conn.cursor(name=f"export_{table.name}") as cursor:  # server-side: memory stays flat
                    cursor.itersize = 2000
                    cursor.execute(sql, params)
                    for values in cursor:
                        row = dict(zip(table.columns, values, strict=True))
                        yield transfer._dump({"table": table.name, "row": row})
                        rows += 1
            yield transfer._dump({"end": True, "rows": rows})
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
