"""The SQLite connections: pragmas, the read and the write transaction, and storage errors.

One long-lived write connection per process, behind a lock, writing in short `BEGIN IMMEDIATE`
transactions; a few long-lived read connections beside it, each read a transaction of its own
(WAL lets them read while a write is under way). Opening a connection per call costs far more than
the query, so connections are kept open and reused.

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
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
from memvm.engine.clock import Clock
from memvm.engine.config import EngineConfig
from memvm.engine.errors import (
    StorageBusy,
    StorageError,
    StorageFull,
    StorageReadOnly,
)
from memvm.engine.storage import api, fulltext_sqlite, sqlite_backup, sqlite_doctor, sqlite_purge
from memvm.engine.storage.dialects import SqliteSql
from memvm.engine.storage.namespace_quota import check_namespace_room
from memvm.engine.storage.purge_queue import PURGE_STARTED
from memvm.engine.storage.read_slots import ReadSlots
from memvm.engine.storage.sqlite_file import (
    cap_pages,
    check_file,
    check_writable,
    connect,
    create_private,
    pragma,
)
from memvm.engine.storage.sqlite_moment import Moment, keep_moment
from memvm.engine.storage.statements import Statement

_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
# SQLite's own wait per attempt on the write connection, and the random pause between attempts
# that lets a writer which keeps losing the race come back at a different moment.
_BUSY_SLICE_MS = 100
_BUSY_PAUSE_S = 0.02

# Pages a removal may add past a full file's cap (or a twentieth of the cap, if more).
_REMOVAL_RESERVE_PAGES = 64

logger = logging.getLogger("memvm.storage")

Row = sqlite3.Row


# Every stored column of every table, as api.Dialect.columns lists them (table_info leaves
# generated columns out).
_COLUMNS = (
    'SELECT m.name, c.name, c.pk, upper(c.type), c."notnull" '
    "FROM sqlite_schema AS m, pragma_table_info(m.name) AS c WHERE m.type = 'table' ORDER BY m.name, c.cid"
)
# SQLite's own tables, and the FTS5 index's (and its vocabulary's) shadow tables.
_OWN_PREFIXES = ("sqlite_", "pages_fts", "pages_terms")
# The errors of a row that does not fit its table: a constraint, or a value SQLite cannot bind.
_ROW_ERRORS = (sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError, sqlite3.DataError)


class SqliteDialect(SqliteSql, api.Dialect):
    fulltext = fulltext_sqlite
    columns = _COLUMNS

    def own_table(self, name: str) -> bool:
        return name.startswith(_OWN_PREFIXES)


DIALECT = SqliteDialect()


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


class Reads(api.Reads):
    """An open SQLite transaction's connection, for reading (see api.Reads)."""

    dialect = DIALECT

    def __init__(self, conn: aiosqlite.Connection, moment: Moment, namespace: str | None, now: float) -> None:
        self._conn = conn
        self.namespace = namespace
        self.now = now
        # Read by memvm_now() on the connection's thread, as the views ask it (see sqlite_moment).
        moment.now = now

    async def all(self, sql: api.Sql, /, **named: Any) -> list[api.Row]:
        # One trip to the connection's thread: execute, fetch and close there together. Each await
        # on an aiosqlite connection is a thread hop, and hops, not SQL, dominate a tool call.
        try:
            return list(await self._conn.execute_fetchall(*self._bound(sql, named)))
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise

    async def stream(
        self, sql: api.Sql, params: Mapping[str, Any] | None = None, *, batch: int = api.STREAM_BATCH
    ) -> AsyncGenerator[list[api.Row], None]:
        try:
            async with self._conn.execute(*self._bound(sql, params or {})) as cursor:
                while rows := await cursor.fetchmany(batch):
                    yield list(rows)
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise

    async def dangling_rows(self) -> int:
        return len(await self.all("PRAGMA foreign_key_check"))


class Writes(Reads, api.Writes):
    """The connection of the one open SQLite write transaction: reads see its own writes."""

    async def execute(self, sql: api.Sql, /, **named: Any) -> None:
        await self._conn.execute(*self._bound(sql, named))

    async def executemany(self, sql: Statement, rows: Iterable[Mapping[str, Any]]) -> None:
        await self._conn.executemany(sql.texts["sqlite"], [self._bound(sql, row)[1] or {} for row in rows])

    async def index_pages(self, rowids: Sequence[int]) -> None:
        """Nothing to do: the schema's triggers keep the FTS5 index in step with every write."""

    async def defer_foreign_keys(self) -> None:
        await self.execute("PRAGMA defer_foreign_keys = ON")

    async def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        names = ", ".join(f'"{column}"' for column in columns)
        sql = f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})'
        batch = [tuple(row) for row in rows]
        # SQLite does not say which row of a batch failed: the batch is undone (a savepoint costs
        # next to nothing here) and its rows tried one at a time, to name the one refused.
        await self.execute("SAVEPOINT memvm_rows")
        try:
            await self._conn.executemany(sql, batch)
        except _ROW_ERRORS as exc:
            await self.execute("ROLLBACK TO SAVEPOINT memvm_rows")
            for index, row in enumerate(batch):
                try:
                    await self._conn.execute(sql, row)
                except _ROW_ERRORS as refused:
                    raise api.RowRefused(str(refused), row=index) from refused
            raise api.RowRefused(str(exc)) from exc
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise
        await self.execute("RELEASE SAVEPOINT memvm_rows")

    async def rows_imported(self) -> None:
        """Nothing to do: the triggers indexed each page as it came, and rowids go on from the largest."""


class Database(api.Database):
    """The connections to one SQLite file (or one private in-memory database)."""

    backend = "sqlite"

    def __init__(
        self,
        writer: aiosqlite.Connection,
        writer_moment: Moment,
        path: str,
        config: EngineConfig,
        clock: Clock,
        quota_bytes: int | None = None,
    ) -> None:
        self._writer = writer
        self._writer_moment = writer_moment
        self.clock = clock
        self._config = config
        self._shared = path == ":memory:"
        self._lock = anyio.Lock()
        self._closed = False
        self._busy_timeout_s = config.busy_timeout_ms / 1000
        # Read connections, opened as reads need them, at most `read_connections` at once: a slow
        # read holds up only its own connection, and a read never waits behind a write (WAL).
        self._idle_readers: list[tuple[aiosqlite.Connection, Moment]] = []
        # Shared out per namespace, so one tenant's slow reads never hold them all (see read_slots).
        self._reader_slots = ReadSlots(config.read_connections)
        self.path = path
        self.target = path
        self._quota_bytes = None if self._shared else quota_bytes
        # Times a write found the file locked by another process and tried again; never reset.
        self.busy_retries = 0

    @classmethod
    async def open(
        cls, path: str | Path, config: EngineConfig, clock: Clock, *, inspect: bool = False
    ) -> "Database":
        """Open the write connection; refuse a corrupt or foreign file with DatabaseRefused, unless
        it is opened to `inspect` it as it is (see open.open_database)."""
        target = str(path)
        if target != ":memory:" and not config.read_only and not inspect:
            check_writable(target)
            create_private(target)
        writer = await connect(
            target, config, busy_ms=min(config.busy_timeout_ms, _BUSY_SLICE_MS), inspect=inspect
        )
        quota_bytes = None
        try:
            moment = await keep_moment(writer)
            if not inspect:
                await check_file(writer)
            if target != ":memory:" and not config.read_only and not inspect:
                # Switching to WAL is a write; a read-only file keeps its mode.
                await pragma(writer, "PRAGMA journal_mode=WAL")
            if config.max_db_mb is not None:
                quota_bytes = await cap_pages(writer, config.max_db_mb * 2**20)
        except BaseException:
            await writer.close()
            raise
        return cls(writer, moment, target, config, clock, quota_bytes)

    async def close(self) -> None:
        """Close every connection; closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            for reader, _ in self._idle_readers:
                await reader.close()
            self._idle_readers.clear()
            await self._writer.close()

    async def diagnose(self) -> api.StorageReport:
        """The file's size, pages and journal, its integrity and owner (see sqlite_doctor)."""
        return await sqlite_doctor.file_report(self)

    async def check_search_index(self) -> str:
        return await sqlite_doctor.search_index_verdict(self)

    async def backup(self, target: Path) -> api.BackupResult:
        """SQLite's online backup of the file, from one snapshot (see sqlite_backup)."""
        async with self._lock:
            return await sqlite_backup.backup(self._writer, Path(self.path), target)

    @asynccontextmanager
    async def read(self, namespace: str | None) -> AsyncIterator[Reads]:
        """One read transaction: all of its queries see the same committed snapshot.

        A read that may be slow names its `namespace`, so that its share of the read connections
        stays fair (see read_slots).
        """
        if self._shared:
            # One private in-memory database has one connection: reads queue behind writes.
            async with self._lock:
                yield Reads(self._writer, self._writer_moment, namespace, self.clock.now())
            return
        async with self._reader_slots.take(namespace):
            conn, moment = await self._reader()
            ended = False
            try:
                await _shielded(conn, "BEGIN")
                try:
                    yield Reads(conn, moment, namespace, self.clock.now())
                finally:
                    await _shielded(conn, "ROLLBACK")  # a read has nothing to commit
                    ended = True
            finally:
                if ended:
                    self._idle_readers.append((conn, moment))
                else:  # a connection whose transaction could not be ended is not reused
                    with anyio.CancelScope(shield=True):
                        await conn.close()

    async def _reader(self) -> tuple[aiosqlite.Connection, Moment]:
        if self._idle_readers:
            return self._idle_readers.pop()
        conn = await connect(self.path, self._config, busy_ms=self._config.busy_timeout_ms)
        await pragma(conn, "PRAGMA query_only=1")
        return conn, await keep_moment(conn)

    @asynccontextmanager
    async def write(self, namespace: str | None = None, *, removal: bool = False) -> AsyncIterator[Writes]:
        """One short write transaction: commits on success, rolls back and re-raises on error.

        The file has one write lock, so every write excludes every other, whatever its namespace.
        BEGIN, COMMIT and ROLLBACK run shielded from cancellation: a call cancelled mid-write
        leaves the connection out of any transaction, ready for the next one.
        """
        async with self._lock:
            if not removal:
                await self._check_room()
            async with self._room_to_remove(removal):
                await self._begin()
                try:
                    writes = Writes(self._writer, self._writer_moment, namespace, self.clock.now())
                    if namespace is not None and not removal and self._config.max_namespace_mb:
                        await check_namespace_room(writes, namespace, self._config.max_namespace_mb)
                    yield writes
                except BaseException as exc:
                    await _rolled_back(self._writer)
                    _raise_translated(exc)
                    raise
                try:
                    await _shielded(self._writer, "COMMIT")
                except sqlite3.Error as exc:
                    await _rolled_back(self._writer)
                    _raise_translated(exc)
                    raise

    @asynccontextmanager
    async def _room_to_remove(self, removal: bool) -> AsyncIterator[None]:
        """For a removal at the quota, the file's cap raised by a reserve meanwhile: deleting a page
        still writes (its full-text delete markers, the mutation log), and a file filled to its cap
        has no free page for that."""
        if not removal or self._quota_bytes is None:
            yield
            return
        page_size = int((await pragma(self._writer, "PRAGMA page_size"))[0][0])
        cap = self._quota_bytes // page_size
        await pragma(self._writer, f"PRAGMA max_page_count={cap + max(_REMOVAL_RESERVE_PAGES, cap // 20)}")
        try:
            yield
        finally:
            # Never below the file's size (SQLite keeps it there): the reserve used stays usable.
            await pragma(self._writer, f"PRAGMA max_page_count={cap}")

    async def _check_room(self) -> None:
        """Refuse a write, as "storage full", while the file and its WAL together pass the quota.

        max_page_count bounds the file alone. The WAL grows past it while a reader holds an old
        snapshot, since checkpoints cannot fold it back meanwhile: so a write that finds the two
        over the quota first folds the WAL in (TRUNCATE) and is refused only if they still are.
        One write may take the total over the quota by its own size; the next is refused.
        """
        if self._quota_bytes is None or await self._in_use() <= self._quota_bytes:
            return
        try:
            await pragma(self._writer, "PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise
        if await self._in_use() > self._quota_bytes:
            raise StorageFull()

    async def _in_use(self) -> int:
        """The bytes the quota counts: the file's pages less its free ones (room forget freed is
        room again), and the WAL."""
        page_size, pages, free = [
            int((await pragma(self._writer, f"PRAGMA {name}"))[0][0])
            for name in ("page_size", "page_count", "freelist_count")
        ]
        return (pages - free) * page_size + self._wal_bytes()

    def _wal_bytes(self) -> int:
        with suppress(FileNotFoundError):
            return os.path.getsize(f"{self.path}-wal")
        return 0

    async def _purge_now(self) -> bool:
        """Take the text of deleted rows out of the file and its WAL (see sqlite_purge)."""
        if self._shared:
            return True  # a private in-memory database has no file to keep anything in
        merged = True
        try:
            async with self.write() as conn:
                # In the merge's own transaction: a delete after it commits marks again.
                await conn.execute(PURGE_STARTED)
                await sqlite_purge.merge_index(conn)
        except StorageFull:
            # The merged index is written beside the old one before that is freed: at the quota or
            # on a full disk it does not fit. The WAL is emptied all the same.
            merged = False
        async with self._lock:
            emptied = await sqlite_purge.empty_wal(self._writer, self._busy_timeout_s)
        return merged and emptied

    async def _begin(self) -> None:
        """Take the file's write lock, retrying while another process holds it (see the module)."""
        deadline = time.monotonic() + self._busy_timeout_s
        while True:
            try:
                await _shielded(self._writer, "BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not isinstance(storage_error(exc), StorageBusy) or time.monotonic() >= deadline:
                    _raise_translated(exc)
                    raise
            self.busy_retries += 1
            logger.info("storage busy: another process holds the write lock; retry %d", self.busy_retries)
            await anyio.sleep(random.uniform(0, _BUSY_PAUSE_S))


async def _shielded(conn: aiosqlite.Connection, sql: str) -> None:
    # Cancelled half-way, a transaction statement would still run on the connection's thread
    # while the caller believes it did not: the next BEGIN would then fail. Let it finish.
    with anyio.CancelScope(shield=True):
        await conn.execute(sql)


async def _rolled_back(conn: aiosqlite.Connection) -> None:
    # SQLite rolls a transaction back by itself on some errors (SQLITE_FULL in the middle of a
    # statement, for one): a ROLLBACK then would fail and hide the error that ended it.
    if conn.in_transaction:
        await _shielded(conn, "ROLLBACK")


def _raise_translated(exc: BaseException) -> None:
    """Re-raise a SQLite failure the caller can act on as its engine error; leave others be."""
    if isinstance(exc, sqlite3.Error) and (error := storage_error(exc)) is not None:
        raise error from exc
