"""`memvm export` / `memvm import`: the whole memory as JSON lines, and back, exactly.

One line per row, `{"table": ..., "row": {...}}`, every stored column by name, rows in primary-key
order; a header line first and an `end` line last (a file cut short is refused). What triggers
derive (the search index, the page counts) is not written: the import rebuilds it, so that an
export of an import is byte for byte the export it came from.

The export reads one snapshot, so it is safe while servers write. A server (the browser view's
download) reads the same lines through the engine's own storage instead, on either backend
(`export_read`). The import fills a database that holds no memory yet, in one transaction: all of
the file, or nothing.
"""

import json
import sqlite3
import time
from collections.abc import Awaitable, Callable, Generator, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
from memvm.engine.operations.export_upgrade import OLDEST_READABLE, Upgrade
from memvm.engine.operations.row_rules import violations
from memvm.engine.storage.api import Reads
from memvm.engine.storage.migrations import SCHEMA_VERSION

FORMAT = "memvm-export"
FORMAT_VERSION = 1
# Kept by triggers from the pages, or SQLite's and FTS5's own: never exported, never imported.
_DERIVED = {"page_counts", "schema_migrations", "guard_verdicts", "purge_owed"}
_DERIVED_PREFIXES = ("sqlite_", "pages_fts", "pages_terms")


class TransferError(Exception):
    """An export or import that cannot go ahead; the message is one line for the person running it."""


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]


# Every stored column of every table (table_info leaves generated ones out), with its place in
# its table's primary key (0 when it has none), in table and column order.
MEMORY_COLUMNS = (
    "SELECT m.name, c.name, c.pk FROM sqlite_schema AS m, pragma_table_info(m.name) AS c "
    "WHERE m.type = 'table' ORDER BY m.name, c.cid"
)


def _derived(name: str) -> bool:
    return name in _DERIVED or name.startswith(_DERIVED_PREFIXES)


def memory_tables(conn: sqlite3.Connection) -> list[Table]:
    """The tables that hold memory, with their stored columns (generated ones excluded) and key."""
    return tables_from(conn.execute(MEMORY_COLUMNS), _derived)


def tables_from(columns: Iterable[Any], derived: Callable[[str], bool]) -> list[Table]:
    """The tables of (table, column, place in the primary key or 0) rows, as MEMORY_COLUMNS gives
    them (and postgres_ops' own), leaving out those `derived` names."""
    found: dict[str, tuple[list[str], list[tuple[int, str]]]] = {}
    for table, column, key_place in columns:
        if derived(table):
            continue
        names, key = found.setdefault(table, ([], []))
        names.append(column)
        if key_place:
            key.append((int(key_place), column))
    return [
        Table(name, tuple(names), tuple(c for _, c in sorted(key))) for name, (names, key) in found.items()
    ]


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def rows_sql(table: Table, namespace: str | None, mark: str = "?") -> tuple[str, tuple[str, ...]]:
    """The statement that reads `table`'s rows for the export (of `namespace`, or of all), in
    primary-key order, with `mark` as its placeholder; and its parameters."""
    where, params = (f"WHERE namespace = {mark}", (namespace,)) if namespace is not None else ("", ())
    return (
        f'SELECT {_quoted(table.columns)} FROM "{table.name}" {where} ORDER BY {_quoted(table.key)}',
        params,
    )


def header_line() -> str:
    return _dump({"format": FORMAT, "version": FORMAT_VERSION, "schema": SCHEMA_VERSION})


def row_line(table: Table, values: Iterable[Any]) -> str:
    return _dump({"table": table.name, "row": dict(zip(table.columns, values, strict=True))})


def _row_lines(table: Table, batch: Iterable[Iterable[Any]]) -> list[str]:
    return [row_line(table, values) for values in batch]


def end_line(rows: int) -> str:
    return _dump({"end": True, "rows": rows})


def export_lines(conn: sqlite3.Connection, namespace: str | None = None) -> Generator[str, None, None]:
    """The export, line by line, read inside one transaction so that it is one moment's memory."""
    conn.execute("BEGIN")
    try:
        check_schema(conn)
        yield header_line()
        rows = 0
        for table in memory_tables(conn):
            for values in conn.execute(*rows_sql(table, namespace)):
                yield row_line(table, values)
                rows += 1
        yield end_line(rows)
    finally:
        conn.execute("ROLLBACK")


async def export_read(conn: Reads, namespace: str, write: Callable[[list[str]], Awaitable[None]]) -> int:
    """The export of `namespace` read inside `conn`, a read transaction of the engine's own storage
    (one snapshot, on a connection of its pool, on either backend), handed to `write` a batch of
    lines at a time: the lines `memvm export --namespace` writes, byte for byte. Returns the rows.

    The engine opened the database, so its schema is this memvm's: there is nothing to check.
    """
    if conn.dialect.name == "postgresql":
        from memvm.engine.operations import postgres_ops

        listing, derived = postgres_ops.MEMORY_COLUMNS, postgres_ops.derived
    else:
        listing, derived = MEMORY_COLUMNS, _derived
    await write([header_line()])
    rows = 0
    for table in tables_from(await conn.all(listing), derived):
        async with aclosing(conn.stream(*rows_sql(table, namespace))) as batches:
            async for batch in batches:
                # Rendered off the event loop: a large export must not hold up other requests.
                await write(await anyio.to_thread.run_sync(_row_lines, table, batch))
                rows += len(batch)
    await write([end_line(rows)])
    return rows


# Pages whose expiry has come and that no write has deleted yet (see paging/pages.py).
_EXPIRED = "SELECT count(*) FROM pages WHERE expires_at IS NOT NULL AND expires_at <= ?"


def expired_pages(conn: sqlite3.Connection) -> int:
    """How many pages have expired and wait to be deleted: an export deletes them first."""
    return int(conn.execute(_EXPIRED, (time.time(),)).fetchone()[0])


def export_to(conn: sqlite3.Connection, out: TextIO, namespace: str | None = None) -> int:
    """Write the export to `out`; returns the rows written."""
    count = -2  # header and end lines
    for line in export_lines(conn, namespace):
        out.write(line + "\n")
        count += 1
    return count


def check_schema(conn: sqlite3.Connection) -> None:
    """Refuse a file that is not a memvm database at this memvm's schema."""
    try:
        version = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
    except sqlite3.OperationalError as exc:
        raise TransferError("the file holds no memvm schema") from exc
    if version != SCHEMA_VERSION:
        raise TransferError(
            f"the database is at schema {version}, this memvm at {SCHEMA_VERSION}; serve it once with this memvm first"
        )


def import_from(conn: sqlite3.Connection, lines: Iterable[str]) -> int:
    """Insert an export into a migrated database that holds no memory; returns the rows inserted."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        check_schema(conn)
        tables = {table.name: table for table in memory_tables(conn)}
        occupied = [name for name in tables if conn.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone()]
        if occupied:
            raise TransferError(
                f"the database already holds memory ({occupied[0]}); import into a new file instead"
            )
        # Rows arrive table by table in name order, not in the order the foreign keys need.
        conn.execute("PRAGMA defer_foreign_keys = ON")
        rows, upgrade = _insert_all(conn, tables, lines)
        for statement in upgrade.finishing():
            conn.execute(statement)
        # A row that fits its table can still break what the tools keep (a page type, JSON, a
        # page of another namespace): checked on what was inserted, before anything is committed.
        broken = violations(conn, tables, limit=1)
        if broken:
            raise TransferError(f"{broken[0]}; nothing was imported")
        if conn.execute("PRAGMA foreign_key_check").fetchone():
            raise TransferError("the file has rows that point at rows it does not hold; nothing was imported")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return rows


def _insert_all(
    conn: sqlite3.Connection, tables: dict[str, Table], lines: Iterable[str]
) -> tuple[int, Upgrade]:
    rows = 0
    started = ended = False
    upgrade = Upgrade(SCHEMA_VERSION)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if ended:
            raise TransferError(f"line {number}: data after the end line")
        record = _parse(line, number)
        if not started:
            upgrade = Upgrade(_check_header(record, number))
            started = True
            continue
        if record.get("end") is True:
            if record.get("rows") != rows:
                raise TransferError(
                    f"line {number}: the end line counts {record.get('rows')} rows, the file has {rows}"
                )
            ended = True
            continue
        record_row = record.get("row")
        if not isinstance(record_row, dict):
            raise TransferError(f"line {number}: not a row of a memvm table at schema {upgrade.schema}")
        for name, row in upgrade.rows(str(record.get("table")), record_row):
            _insert_row(conn, tables.get(name), row, number, upgrade.schema)
        rows += 1
    if not ended:
        raise TransferError("the file ends before its end line: it was cut short; nothing was imported")
    return rows, upgrade


def _insert_row(
    conn: sqlite3.Connection, table: Table | None, row: dict[str, Any], number: int, schema: int
) -> None:
    if table is None or set(row) != set(table.columns):
        raise TransferError(f"line {number}: not a row of a memvm table at schema {schema}")
    try:
        conn.execute(
            f'INSERT INTO "{table.name}" ({_quoted(table.columns)}) VALUES ({", ".join("?" * len(table.columns))})',
            [row[column] for column in table.columns],
        )
    except (sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError) as exc:
        raise TransferError(f"line {number}: the row does not fit its table ({exc})") from exc


def _parse(line: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TransferError(f"line {number}: not JSON ({exc.msg})") from exc
    if not isinstance(record, dict):
        raise TransferError(f"line {number}: not a JSON object")
    return record


def _check_header(record: dict[str, Any], number: int) -> int:
    """The export's schema, when this memvm reads it."""
    if record.get("format") != FORMAT or record.get("version") != FORMAT_VERSION:
        raise TransferError(f"line {number}: not a memvm export (no memvm-export header)")
    schema = record.get("schema")
    if (
        isinstance(schema, int)
        and not isinstance(schema, bool)
        and OLDEST_READABLE <= schema <= SCHEMA_VERSION
    ):
        return schema
    raise TransferError(
        f"the export is at schema {schema}, this memvm at {SCHEMA_VERSION}; "
        "use the memvm that wrote it, or export again after serving the file with this one"
    )


def _dump(record: dict[str, Any]) -> str:
    # ensure_ascii=False keeps text readable. Floats are written with repr, which reads back
    # exact; an infinite REAL (SQLite stores no NaN) becomes JSON's common Infinity extension.
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
