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
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
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
from memvm.engine.storage import api, sqlite_purge
from memvm.engine.storage.namespace_quota import check_namespace_room
from memvm.engine.storage.purge_queue import PURGE_STARTED
from memvm.engine.storage.read_slots import ReadSlots

# "memv" in ASCII: marks a file as memvm's, so a foreign SQLite file is never migrated over.
APPLICATION_ID = 0x6D656D76

_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
# SQLite's own wait per attempt on the write connection, and the random pause between attempts
# that lets a writer which keeps losing the race come back at a different moment.
_BUSY_SLICE_MS = 100
_BUSY_PAUSE_S = 0.02

logger = logging.getLogger("memvm.storage")

Row = sqlite3.Row


class SqliteDialect(api.Dialect):
    name = "sqlite"

    def least(self, *values: str) -> str:
        return f"min({', '.join(values)})"

    def greatest(self, *values: str) -> str:
        return f"max({', '.join(values)})"

    def find(self, haystack: str, needle: str) -> str:
        return f"instr({haystack}, {needle})"

    def json_strings(self, param: str) -> str:
        return f"json_each({param}) AS s"


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

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def all(self, sql: str, params: Iterable[Any] = ()) -> list[api.Row]:
        # One trip to the connection's thread: execute, fetch and close there together. Each await
        # on an aiosqlite connection is a thread hop, and hops, not SQL, dominate a tool call.
        try:
            return list(await self._conn.execute_fetchall(sql, tuple(params)))
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise

    async def stream(
        self, sql: str, params: Iterable[Any] = (), *, batch: int = api.STREAM_BATCH
    ) -> AsyncGenerator[list[api.Row], None]:
        try:
            async with self._conn.execute(sql, tuple(params)) as cursor:
                while rows := await cursor.fetchmany(batch):
                    yield list(rows)
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise


class Writes(Reads, api.Writes):
    """The connection of the one open SQLite write transaction: reads see its own writes."""

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> None:
        await self._conn.execute(sql, tuple(params))

    async def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        await self._conn.executemany(sql, [tuple(row) for row in rows])

    async def index_pages(self, rowids: Sequence[int]) -> None:
        """Nothing to do: the schema's triggers keep the FTS5 index in step with every write."""


class Database(api.Database):
    """The connections to one SQLite file (or one private in-memory database)."""

    backend = "sqlite"

    def __init__(
        self, writer: aiosqlite.Connection, path: str, config: EngineConfig, quota_bytes: int | None = None
    ) -> None:
        self._writer = writer
        self._config = config
        self._shared = path == ":memory:"
        self._lock = anyio.Lock()
        self._closed = False
        self._busy_timeout_s = config.busy_timeout_ms / 1000
        # Read connections, opened as reads need them, at most `read_connections` at once: a slow
        # read holds up only its own connection, and a read never waits behind a write (WAL).
        self._idle_readers: list[aiosqlite.Connection] = []
        # Shared out per namespace, so one tenant's slow reads never hold them all (see read_slots).
        self._reader_slots = ReadSlots(config.read_connections)
        self.path = path
        self.target = path
        self._quota_bytes = None if self._shared else quota_bytes
        # Times a write found the file locked by another process and tried again; never reset.
        self.busy_retries = 0

    @classmethod
    async def open(cls, path: str | Path, config: EngineConfig) -> "Database":
        """Open the write connection; refuse a corrupt or foreign file with DatabaseRefused."""
        target = str(path)
        if target != ":memory:" and not config.read_only:
            _check_writable(target)
            _create_private(target)
        writer = await _connect(target, config, busy_ms=min(config.busy_timeout_ms, _BUSY_SLICE_MS))
        quota_bytes = None
        try:
            await _check_file(writer)
            if target != ":memory:" and not config.read_only:
                # Switching to WAL is a write; a read-only file keeps its mode.
                await _pragma(writer, "PRAGMA journal_mode=WAL")
            if config.max_db_mb is not None:
                quota_bytes = await _cap_pages(writer, config.max_db_mb * 2**20)
        except BaseException:
            await writer.close()
            raise
        return cls(writer, target, config, quota_bytes)

    async def close(self) -> None:
        """Close every connection; closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            for reader in self._idle_readers:
                await reader.close()
            self._idle_readers.clear()
            await self._writer.close()

    @asynccontextmanager
    async def read(self, namespace: str | None) -> AsyncIterator[Reads]:
        """One read transaction: all of its queries see the same committed snapshot.

        A read that may be slow names its `namespace`, so that its share of the read connections
        stays fair (see read_slots).
        """
        if self._shared:
            # One private in-memory database has one connection: reads queue behind writes.
            async with self._lock:
                yield Reads(self._writer)
            return
        async with self._reader_slots.take(namespace):
            conn = await self._reader()
            ended = False
            try:
                await _shielded(conn, "BEGIN")
                try:
                    yield Reads(conn)
                finally:
                    await _shielded(conn, "ROLLBACK")  # a read has nothing to commit
                    ended = True
            finally:
                if ended:
                    self._idle_readers.append(conn)
                else:  # a connection whose transaction could not be ended is not reused
                    with anyio.CancelScope(shield=True):
                        await conn.close()

    async def _reader(self) -> aiosqlite.Connection:
        if self._idle_readers:
            return self._idle_readers.pop()
        conn = await _connect(self.path, self._config, busy_ms=self._config.busy_timeout_ms)
        await _pragma(conn, "PRAGMA query_only=1")
        return conn

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
                    writes = Writes(self._writer)
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
        page_size = int((await _pragma(self._writer, "PRAGMA page_size"))[0][0])
        cap = self._quota_bytes // page_size
        await _pragma(self._writer, f"PRAGMA max_page_count={cap + max(_REMOVAL_RESERVE_PAGES, cap // 20)}")
        try:
            yield
        finally:
            # Never below the file's size (SQLite keeps it there): the reserve used stays usable.
            await _pragma(self._writer, f"PRAGMA max_page_count={cap}")

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
            await _pragma(self._writer, "PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            _raise_translated(exc)
            raise
        if await self._in_use() > self._quota_bytes:
            raise StorageFull()

    async def _in_use(self) -> int:
        """The bytes the quota counts: the file's pages less its free ones (room forget freed is
        room again), and the WAL."""
        page_size, pages, free = [
            int((await _pragma(self._writer, f"PRAGMA {name}"))[0][0])
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


_UNREADABLE_WAL = (
    "its last writes are in its -wal file, which SQLite cannot read in a folder it may not write; "
    "copy the file with its -wal to a writable folder (or serve it there once) and open that"
)


def connect_blocking(path: str | Path, *, read_only: bool = False) -> sqlite3.Connection:
    """A plain connection for the operator's one-shot commands (doctor, export, import, backup).

    They run beside serving processes, so they wait for the write lock as long as the engine does;
    transactions are explicit (isolation_level=None), as on the engine's own connections.
    `read_only` opens it as `serve --read-only` does, for a file on read-only media.
    """
    if read_only:
        if unreadable_wal(path):
            raise DatabaseRefused(_UNREADABLE_WAL)
        conn = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None)
    else:
        conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={EngineConfig().busy_timeout_ms}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA secure_delete=ON")  # as on the engine's connections (see _connect)
    return conn


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


async def _pragma(conn: aiosqlite.Connection, sql: str) -> list[Row]:
    # Drain and close: a pragma's open result row would keep its statement (and a lock) alive.
    async with conn.execute(sql) as cursor:
        return list(await cursor.fetchall())


def read_only_uri(target: str | Path) -> str:
    """The file as a percent-encoded file: URI for SQLite's mode=ro, the only way to ask for it.

    A WAL file opened read-only still needs its -shm beside it, which SQLite creates on the
    first read: in a folder nobody may write (a backup on read-only media) that fails. There the
    file is opened `immutable` instead, which needs no -shm: nothing can change a file whose folder
    cannot take a WAL, provided the last writer left no WAL behind (see `unreadable_wal`).
    """
    path = os.path.abspath(target)
    uri = f"{PurePath(path).as_uri()}?mode=ro"
    if _on_read_only_media(path) and not _wal_content(path):
        uri += "&immutable=1"
    return uri


def unreadable_wal(target: str | Path) -> bool:
    """True when the file's last writes sit in a WAL that cannot be read from where it is: no
    -shm beside it and a folder where none can be made."""
    path = os.path.abspath(target)
    return _on_read_only_media(path) and _wal_content(path)


def writable(target: str | Path) -> bool:
    """Whether this process may write the file and its folder (where SQLite keeps -wal and -shm)."""
    path = os.path.abspath(target)
    return os.access(path, os.W_OK) and os.access(os.path.dirname(path), os.W_OK)


def _check_writable(target: str) -> None:
    """Refuse, saying why, a file that cannot be opened for writing: SQLite's own words for it
    ("unable to open database file", "attempt to write a readonly database") sound like damage."""
    path = os.path.abspath(target)
    if not os.path.exists(path):
        if not os.access(os.path.dirname(path), os.W_OK):
            raise DatabaseRefused(
                "its folder cannot be written, so the database cannot be made there; name a file in a "
                "folder this user may write"
            )
        return
    if not os.access(os.path.dirname(path), os.W_OK):
        raise DatabaseRefused(
            "its folder cannot be written (read-only media?), and SQLite keeps its -wal and -shm files "
            "there; serve it as it is with --read-only, or copy it to a folder this user may write"
        )
    if not os.access(path, os.W_OK):
        raise DatabaseRefused(
            "the file cannot be written by this user; serve it as it is with --read-only, or make it writable"
        )


def _create_private(target: str) -> None:
    """Make a new database file readable by its owner alone before SQLite opens it.

    It holds every captured prompt, reply and command; SQLite gives its -wal and -shm files the
    database file's own permissions, so they are private too. An existing file keeps its mode."""
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise DatabaseRefused(f"cannot create the database file ({exc.strerror})") from exc


def _on_read_only_media(path: str) -> bool:
    # os.access asks the kernel, so a read-only mount counts even for root, and a -shm already
    # there (left by a writer) is used as SQLite reads WAL files with it.
    return not os.access(os.path.dirname(path), os.W_OK) and not os.path.exists(f"{path}-shm")


def _wal_content(path: str) -> bool:
    try:
        return os.path.getsize(f"{path}-wal") > 0
    except OSError:
        return False


def wal_in_header(target: str | Path) -> bool:
    """Whether the file's header marks it as a WAL database (an immutable open reports "delete")."""
    with open(target, "rb") as file:
        header = file.read(20)
    return len(header) == 20 and header[18] == 2 and header[19] == 2


async def _connect(target: str, config: EngineConfig, *, busy_ms: int) -> aiosqlite.Connection:
    try:
        if config.read_only and target != ":memory:":
            if unreadable_wal(target):
                raise DatabaseRefused(_UNREADABLE_WAL)
            conn = await aiosqlite.connect(read_only_uri(target), uri=True, isolation_level=None)
        else:
            conn = await aiosqlite.connect(target, isolation_level=None)
    except sqlite3.Error as exc:
        raise DatabaseRefused(f"cannot open the database: {exc}") from exc
    conn.row_factory = sqlite3.Row
    try:
        # These are per connection; only journal_mode is stored in the file.
        await _pragma(conn, f"PRAGMA busy_timeout={int(busy_ms)}")
        await _pragma(conn, f"PRAGMA synchronous={config.synchronous.value}")
        await _pragma(conn, "PRAGMA foreign_keys=ON")
        # What a delete or an update removes is overwritten with zeros, not left in free space:
        # `forget` promises the text is gone from the file (see sqlite_purge).
        await _pragma(conn, "PRAGMA secure_delete=ON")
    except sqlite3.Error as exc:
        await conn.close()
        raise DatabaseRefused(f"not a usable SQLite database ({exc})") from exc
    return conn


# Pages a removal may add past a full file's cap (or a twentieth of the cap, if more).
_REMOVAL_RESERVE_PAGES = 64


async def _cap_pages(writer: aiosqlite.Connection, cap_bytes: int) -> int:
    """Hold the file to `cap_bytes`; returns the quota in force, in bytes.

    max_page_count is per connection, and only the writer grows the file. SQLite never sets it
    below the file's size: a file already over the cap is held to the size it has, so it still
    opens, its reads go on, it never grows, and the room `forget` frees is used again.
    """
    page_size = int((await _pragma(writer, "PRAGMA page_size"))[0][0])
    pages = (await _pragma(writer, f"PRAGMA max_page_count={cap_bytes // page_size}"))[0][0]
    return max(cap_bytes, int(pages) * page_size)


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
