"""The SQLite connection pair: pragmas, the write transaction, and storage errors.

One long-lived write connection per process, behind a lock, writing in short `BEGIN IMMEDIATE`
transactions; one long-lived read connection beside it (WAL lets it read while a write is under
way). Opening a connection per call costs far more than the query, so neither is ever reopened.

Several processes may write one file. SQLite's own busy wait is not a fair queue: a writer can
lose the lock to others again and again. So the write connection waits only a short slice inside
SQLite, and the engine retries after a random pause until `busy_timeout_ms` has passed; only then
does a caller see "storage busy".
"""

import logging
import os
import random
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path, PurePath
from typing import Any

import aiosqlite
import anyio
from memvm.engine.config import EngineConfig
from memvm.engine.errors import (
    DatabaseRefused,
    StorageBusy,
    StorageError,
    StorageFull,
    StorageReadOnly,
)

# "memv" in ASCII: marks a file as memvm's, so a foreign SQLite file is never migrated over.
APPLICATION_ID = 0x6D656D76

_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
# SQLite's own wait per attempt on the write connection, and the random pause between attempts
# that lets a writer which keeps losing the race come back at a different moment.
_BUSY_SLICE_MS = 100
_BUSY_PAUSE_S = 0.02

logger = logging.getLogger("memvm.storage")

Row = sqlite3.Row


def storage_error(exc: sqlite3.Error) -> StorageError | None:
    """The engine error for a SQLite failure the caller can act on, or None for a bug."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary in _BUSY_CODES:
        return StorageBusy()
    if primary == sqlite3.SQLITE_FULL:
        return StorageFull()
    if primary == sqlite3.SQLITE_READONLY:
        return StorageReadOnly()
    return None


class Database:
    """The connections to one SQLite file (or one private in-memory database)."""

    def __init__(
        self, writer: aiosqlite.Connection, reader: aiosqlite.Connection, path: str, busy_timeout_ms: int
    ) -> None:
        self._writer = writer
        self._reader = reader
        self._shared = reader is writer
        self._lock = anyio.Lock()
        self._closed = False
        self._busy_timeout_s = busy_timeout_ms / 1000
        self.path = path
        # Times a write found the file locked by another process and tried again; never reset.
        self.busy_retries = 0

    @classmethod
    async def open(cls, path: str | Path, config: EngineConfig) -> "Database":
        """Open both connections; refuse a corrupt or foreign file with DatabaseRefused."""
        target = str(path)
        writer = await _connect(target, config, busy_ms=min(config.busy_timeout_ms, _BUSY_SLICE_MS))
        try:
            await _check_file(writer)
            if target == ":memory:":
                return cls(writer, writer, target, config.busy_timeout_ms)
            if not config.read_only:  # switching to WAL is a write; a read-only file keeps its mode
                await _pragma(writer, "PRAGMA journal_mode=WAL")
            if config.max_db_mb is not None:
                # max_page_count is per connection and only the writer grows the file.
                page_size = await fetchone(writer, "PRAGMA page_size")
                assert page_size is not None  # the pragma always answers
                await _pragma(writer, f"PRAGMA max_page_count={config.max_db_mb * 2**20 // page_size[0]}")
            reader = await _connect(target, config, busy_ms=config.busy_timeout_ms)
            await _pragma(reader, "PRAGMA query_only=1")
        except BaseException:
            await writer.close()
            raise
        return cls(writer, reader, target, config.busy_timeout_ms)

    async def close(self) -> None:
        """Close both connections; closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        if not self._shared:
            await self._reader.close()
        await self._writer.close()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One short write transaction: commits on success, rolls back and re-raises on error."""
        async with self._lock:
            await self._begin()
            try:
                yield self._writer
            except BaseException as exc:
                await self._writer.rollback()
                _raise_translated(exc)
                raise
            try:
                await self._writer.commit()
            except sqlite3.Error as exc:
                await self._writer.rollback()
                _raise_translated(exc)
                raise

    async def _begin(self) -> None:
        """Take the file's write lock, retrying while another process holds it (see the module)."""
        deadline = time.monotonic() + self._busy_timeout_s
        while True:
            try:
                await self._writer.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not isinstance(storage_error(exc), StorageBusy) or time.monotonic() >= deadline:
                    _raise_translated(exc)
                    raise
            self.busy_retries += 1
            logger.info("storage busy: another process holds the write lock; retry %d", self.busy_retries)
            await anyio.sleep(random.uniform(0, _BUSY_PAUSE_S))

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Row]:
        """Run a read on the read connection; the snapshot ends with the call."""
        try:
            if self._shared:
                # One private in-memory database has one connection: reads queue behind writes.
                async with self._lock:
                    return await fetchall(self._writer, sql, params)
            return await fetchall(self._reader, sql, params)
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    @property
    def writer(self) -> aiosqlite.Connection:
        """The write connection, for migrations at start (outside any tool call)."""
        return self._writer


def connect_blocking(path: str | Path) -> sqlite3.Connection:
    """A plain connection for the operator's one-shot commands (doctor, export, import, backup).

    They run beside serving processes, so they wait for the write lock as long as the engine does;
    transactions are explicit (isolation_level=None), as on the engine's own connections.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={EngineConfig().busy_timeout_ms}")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


async def fetchall(conn: aiosqlite.Connection, sql: str, params: Iterable[Any] = ()) -> list[Row]:
    """A read inside a write transaction (sees the transaction's own writes)."""
    # One trip to the connection's thread: execute, fetch and close there together. Each await
    # on an aiosqlite connection is a thread hop, and hops, not SQL, dominate a tool call.
    return list(await conn.execute_fetchall(sql, tuple(params)))


async def fetchone(conn: aiosqlite.Connection, sql: str, params: Iterable[Any] = ()) -> Row | None:
    rows = await fetchall(conn, sql, params)
    return rows[0] if rows else None


# Where a read can run: the read connection, or inside a write transaction (seeing its writes).
Source = aiosqlite.Connection | Database


async def query(source: Source, sql: str, params: Iterable[Any] = ()) -> list[Row]:
    if isinstance(source, Database):
        return await source.fetchall(sql, params)
    return await fetchall(source, sql, params)


async def query_one(source: Source, sql: str, params: Iterable[Any] = ()) -> Row | None:
    rows = await query(source, sql, params)
    return rows[0] if rows else None


# Values per IN list: far below SQLite's variable limit. The SQL gets a count of placeholders,
# never a value from input.
_IN_CHUNK = 400


async def query_in(source: Source, sql: str, params: Sequence[Any], values: Sequence[Any]) -> list[Row]:
    """Run `sql`, whose `{marks}` is an IN list, for `values` in chunks; `params` come first."""
    rows: list[Row] = []
    for start in range(0, len(values), _IN_CHUNK):
        chunk = values[start : start + _IN_CHUNK]
        rows.extend(await query(source, sql.format(marks=", ".join("?" * len(chunk))), (*params, *chunk)))
    return rows


def _raise_translated(exc: BaseException) -> None:
    """Re-raise a SQLite failure the caller can act on as its engine error; leave others be."""
    if isinstance(exc, sqlite3.Error) and (error := storage_error(exc)) is not None:
        raise error from exc


async def _pragma(conn: aiosqlite.Connection, sql: str) -> None:
    # Drain and close: a pragma's open result row would keep its statement (and a lock) alive.
    async with conn.execute(sql) as cursor:
        await cursor.fetchall()


def _read_only_uri(target: str) -> str:
    """The path as a percent-encoded file: URI, which is the only way to ask SQLite for mode=ro."""
    return f"{PurePath(os.path.abspath(target)).as_uri()}?mode=ro"


async def _connect(target: str, config: EngineConfig, *, busy_ms: int) -> aiosqlite.Connection:
    try:
        if config.read_only and target != ":memory:":
            conn = await aiosqlite.connect(_read_only_uri(target), uri=True, isolation_level=None)
        else:
            conn = await aiosqlite.connect(target, isolation_level=None)
    except sqlite3.Error as exc:
        raise DatabaseRefused(f"cannot open the database: {exc}") from exc
    conn.row_factory = sqlite3.Row
    try:
        # These three are per connection; only journal_mode is stored in the file.
        await _pragma(conn, f"PRAGMA busy_timeout={int(busy_ms)}")
        await _pragma(conn, f"PRAGMA synchronous={config.synchronous.value}")
        await _pragma(conn, "PRAGMA foreign_keys=ON")
    except sqlite3.Error as exc:
        await conn.close()
        raise DatabaseRefused(f"not a usable SQLite database ({exc})") from exc
    return conn


async def _check_file(conn: aiosqlite.Connection) -> None:
    """Refuse a corrupt file, or a SQLite file that belongs to another program."""
    try:
        async with conn.execute("PRAGMA quick_check") as cursor:
            verdict = [row[0] for row in await cursor.fetchall()]
        async with conn.execute("PRAGMA application_id") as cursor:
            row = await cursor.fetchone()
        async with conn.execute("SELECT count(*) FROM sqlite_schema") as cursor:
            objects = await cursor.fetchone()
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(f"not a usable SQLite database ({exc})") from exc
    if verdict != ["ok"]:
        raise DatabaseRefused(f"the database failed its integrity check ({verdict[0]})")
    app_id = row[0] if row else 0
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and objects and objects[0] > 0):
        raise DatabaseRefused("the file is a SQLite database of another program, not a memvm database")
