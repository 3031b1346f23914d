"""`memvm export` / `memvm import`: the whole memory as JSON lines, and back, exactly, on either backend.

One line per row, `{"table": ..., "row": {...}}`, every stored column by name, rows in primary-key
order; a header line first and an `end` line last (a file cut short is refused). What triggers or
the engine derive (the search index, the page counts) is not written: the import rebuilds it, so
that an export of an import is byte for byte the export it came from, whichever backend each ran on.

Both are written once against the storage seam. The export reads one snapshot (`Reads.stream`, so
memory stays flat however large the database), so it is safe while servers write; the command line
and the browser view's download read the same lines (`export_read`). The import fills a database
that holds no memory yet, in one write transaction that excludes every other: all of the file, or
nothing, every row held to the rules the tools keep (row_rules) before anything is committed.
"""

import json
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from contextlib import aclosing
from typing import Any

import anyio
from memvm.engine.operations.export_upgrade import OLDEST_READABLE, Upgrade
from memvm.engine.operations.row_rules import violations
from memvm.engine.operations.tables import Catalogue, Table, catalogue, schema_version
from memvm.engine.storage.api import STREAM_BATCH, Reads, RowRefused, Writes
from memvm.engine.storage.migrations import SCHEMA_VERSION
from memvm.engine.storage.statements import Statement, template

FORMAT = "memvm-export"
FORMAT_VERSION = 1


class TransferError(Exception):
    """An export or import that cannot go ahead; the message is one line for the person running it."""


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


# A table's rows in primary-key order: the table, its columns and its key are the catalogue's.
_ROWS = template(
    "transfer.rows",
    "SELECT {columns} FROM {table} {where} ORDER BY {key}",
    columns='"namespace", "session"',
    table='"sessions"',
    where="WHERE namespace = :namespace",
    key='"namespace", "session"',
)


def rows_sql(table: Table, namespace: str | None) -> tuple[Statement, dict[str, str]]:
    """The statement that reads `table`'s rows for the export (of `namespace`, or of all), in
    primary-key order; and its parameters."""
    where, params = (
        ("WHERE namespace = :namespace", {"namespace": namespace}) if namespace is not None else ("", {})
    )
    filled = _ROWS.fill(
        columns=_quoted(table.columns), table=f'"{table.name}"', where=where, key=_quoted(table.key)
    )
    return filled, params


def header_line() -> str:
    return _dump({"format": FORMAT, "version": FORMAT_VERSION, "schema": SCHEMA_VERSION})


def row_line(table: Table, values: Iterable[Any]) -> str:
    return _dump({"table": table.name, "row": dict(zip(table.columns, values, strict=True))})


def _row_lines(table: Table, batch: Iterable[Iterable[Any]]) -> list[str]:
    return [row_line(table, values) for values in batch]


def end_line(rows: int) -> str:
    return _dump({"end": True, "rows": rows})


async def check_schema(conn: Reads) -> Catalogue:
    """The tables of a memvm database at this memvm's schema; TransferError for any other."""
    tables = await catalogue(conn)
    version = await schema_version(conn, tables)
    if version is None:
        raise TransferError("the database holds no memvm schema; serve it once with this memvm first")
    if version != SCHEMA_VERSION:
        raise TransferError(
            f"the database is at schema {version}, this memvm at {SCHEMA_VERSION}; serve it once with this memvm first"
        )
    return tables


async def expired_pages(conn: Reads) -> int:
    """How many pages have expired by the transaction's moment and wait to be deleted: an export
    deletes them first."""
    await check_schema(conn)
    row = await conn.one("SELECT count(*) FROM expired_pages")
    return int(row[0]) if row else 0


async def export_read(
    conn: Reads, namespace: str | None, write: Callable[[list[str]], Awaitable[None]]
) -> int:
    """The export of `namespace` (or of the whole database) read inside `conn`, one read
    transaction (one snapshot), handed to `write` a batch of lines at a time: the lines `memvm
    export` writes, byte for byte, on either backend. Returns the rows."""
    tables = await check_schema(conn)
    await write([header_line()])
    rows = 0
    for table in tables.memory:
        async with aclosing(conn.stream(*rows_sql(table, namespace))) as batches:
            async for batch in batches:
                # Rendered off the event loop: a large export must not hold up other requests.
                await write(await anyio.to_thread.run_sync(_row_lines, table, batch))
                rows += len(batch)
    await write([end_line(rows)])
    return rows


async def import_from(conn: Writes, lines: AsyncIterable[str]) -> int:
    """Insert an export into a migrated database that holds no memory, inside `conn`, a write
    transaction that excludes every other; returns the rows inserted. Any TransferError leaves the
    transaction to be rolled back: nothing is imported."""
    tables = {table.name: table for table in (await check_schema(conn)).memory}
    for name in tables:
        if await conn.one(f'SELECT 1 FROM "{name}" LIMIT 1') is not None:
            raise TransferError(
                f"the database already holds memory ({name}); import into a new database instead"
            )
    # Rows arrive table by table in name order, not in the order the foreign keys need.
    await conn.defer_foreign_keys()
    rows, upgrade = await _insert_all(conn, tables, lines)
    for statement in upgrade.finishing():
        await conn.execute(statement)
    # A row that fits its table can still break what the tools keep (a page type, JSON, a page of
    # another namespace): checked on what was inserted, before anything is committed.
    broken = await violations(conn, tables.values(), limit=1)
    if broken:
        raise TransferError(f"{broken[0]}; nothing was imported")
    if await conn.dangling_rows():
        raise TransferError("the file has rows that point at rows it does not hold; nothing was imported")
    await conn.rows_imported()
    return rows


class _Batch:
    """Rows of one table waiting to be inserted together, each with the line it came from."""

    def __init__(self, conn: Writes) -> None:
        self._conn = conn
        self._table: Table | None = None
        self._rows: list[tuple[int, list[Any]]] = []

    async def add(self, table: Table, values: list[Any], number: int) -> None:
        if self._table is not table or len(self._rows) >= STREAM_BATCH:
            await self.flush()
        self._table = table
        self._rows.append((number, values))

    async def flush(self) -> None:
        if self._table is None or not self._rows:
            return
        table, rows = self._table, self._rows
        self._rows = []
        try:
            await self._conn.insert_rows(table.name, table.columns, [values for _, values in rows])
        except RowRefused as exc:
            where = f"lines {rows[0][0]} to {rows[-1][0]}" if exc.row is None else f"line {rows[exc.row][0]}"
            raise TransferError(f"{where}: the row does not fit its table ({exc})") from exc


async def _insert_all(
    conn: Writes, tables: dict[str, Table], lines: AsyncIterable[str]
) -> tuple[int, Upgrade]:
    rows = number = 0
    started = ended = False
    upgrade = Upgrade(SCHEMA_VERSION)
    batch = _Batch(conn)
    async for line in lines:
        number += 1
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
            table = tables.get(name)
            if table is None or set(row) != set(table.columns):
                raise TransferError(f"line {number}: not a row of a memvm table at schema {upgrade.schema}")
            await batch.add(table, [row[column] for column in table.columns], number)
        rows += 1
    if not ended:
        raise TransferError("the file ends before its end line: it was cut short; nothing was imported")
    await batch.flush()
    return rows, upgrade


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
