"""PostgreSQL: a pool of connections, the read and the write transaction, and storage errors.

Several memvm processes share one database, so the file lock SQLite gives for free is taken
explicitly: each write transaction starts with an advisory transaction lock on its namespace
(`pg_advisory_xact_lock`), so that read-modify-write steps (the next sequence number, a counter)
never interleave between processes; a write without a namespace (migrations, maintenance) takes
an exclusive lock that every namespace's write shares. PostgreSQL queues lock waiters fairly, so
one wait of `busy_timeout_ms` replaces SQLite's retry loop; after it the caller sees "storage busy".

Reads are REPEATABLE READ, READ ONLY transactions: one snapshot for all of a read's queries, as
on SQLite. BEGIN, COMMIT and ROLLBACK are shielded from cancellation; a connection whose
transaction could not be ended is closed, never handed to the next caller.
"""

import hashlib
import itertools
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psycopg
from memvm.engine.clock import Clock
from memvm.engine.config import EngineConfig
from memvm.engine.errors import (
    BackupError,
    DatabaseRefused,
    InvalidArgument,
    StorageBusy,
    StorageError,
    StorageFull,
    StorageReadOnly,
    StorageUnavailable,
)
from memvm.engine.storage import api, fulltext_postgres, postgres_doctor, postgres_purge
from memvm.engine.storage.dialects import PostgresSql
from memvm.engine.storage.namespace_quota import check_namespace_room
from memvm.engine.storage.open import shown
from memvm.engine.storage.postgres_catalog import COLUMNS, MOVE_IDENTITIES, OWN_TABLES
from memvm.engine.storage.postgres_changes import ChangeChannel
from memvm.engine.storage.postgres_postings import (
    DELETE_TERMS_OF,
    INSERT_TERMS,
    SEARCHED_TEXTS,
    SEARCHED_TEXTS_OF,
    SET_SEARCH_CHARS,
    index_rows,
)
from memvm.engine.storage.postgres_rows import PgRow
from memvm.engine.storage.purge_queue import OWE_PURGE, PURGE_STARTED
from memvm.engine.storage.read_slots import ReadSlots
from memvm.engine.storage.statements import Statement
from memvm.engine.storage.tokenizer import Stemmer
from psycopg.adapt import Loader
from psycopg_pool import AsyncConnectionPool, PoolTimeout

logger = logging.getLogger("memvm.storage")

# Advisory lock keys: "memv" in ASCII as the class of the lock every write shares (a write
# without a namespace takes it alone); namespaces take 64-bit keys, a key space apart.
_LOCK_CLASS = 0x6D656D76
_CONNECT_TIMEOUT_S = 10
# Where processes announce changes to each other (working sets, manifests), and the pause before
# listening again after the listening connection was lost.

_BUSY_STATES = {"55P03", "40P01", "40001"}  # lock not available, deadlock, serialization failure
_FULL_STATES = {"53100", "54000"}  # disk full, program limit exceeded
_READ_ONLY_STATES = {"25006"}


def storage_error(exc: BaseException) -> StorageError | None:
    """The engine error for a PostgreSQL failure the caller can act on, or None for a bug."""
    if isinstance(exc, psycopg.Error):
        state = exc.sqlstate or ""
        if state in _BUSY_STATES:
            return StorageBusy()
        if state in _FULL_STATES:
            return StorageFull()
        if state in _READ_ONLY_STATES:
            return StorageReadOnly()
        if isinstance(exc, psycopg.OperationalError) or state.startswith(("08", "57P")):
            return StorageUnavailable()
    if isinstance(exc, PoolTimeout):
        return StorageUnavailable()
    return None


# PostgreSQL text cannot hold U+0000 (psycopg refuses it before sending; jsonb refuses its escape).
_NUL_REFUSED = (
    "The text holds a NUL character (U+0000), which this memory's database cannot store; "
    "remove it and call again."
)


def _raise_translated(exc: BaseException) -> None:
    if (error := storage_error(exc)) is not None:
        raise error from exc
    if isinstance(exc, psycopg.DataError) and (
        "NUL (0x00)" in str(exc) or getattr(exc, "sqlstate", None) in ("22P05", "22021")
    ):
        raise InvalidArgument(_NUL_REFUSED) from exc


def namespace_lock_key(namespace: str) -> int:
    """A stable signed 64-bit key for the namespace's advisory lock, the same in every process."""
    digest = hashlib.blake2b(namespace.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class _Numbers(Loader):
    """NUMERIC (what sum() of a bigint gives) as an int or a float, never a Decimal: the engine's
    arithmetic and its JSON treat numbers as SQLite returns them."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return int(text) if text.lstrip("-").isdigit() else float(text)


def _rows(cursor: Any) -> Any:
    names: dict[str, int] = {}
    for index, column in enumerate(cursor.description or ()):
        names.setdefault(column.name, index)
    return lambda values: PgRow(names, values)


class PgDialect(PostgresSql, api.Dialect):
    fulltext = fulltext_postgres
    columns = COLUMNS

    def own_table(self, name: str) -> bool:
        return name in OWN_TABLES


DIALECT = PgDialect()
_cursors = itertools.count(1)


class Reads(api.Reads):
    dialect = DIALECT

    def __init__(self, conn: psycopg.AsyncConnection[Any], namespace: str | None, now: float) -> None:
        self._conn = conn
        self.namespace = namespace
        self.now = now

    async def all(self, sql: api.Sql, /, **named: Any) -> list[api.Row]:
        text, values = self._bound(sql, named)
        try:
            cursor = await self._conn.execute(text, values)
            return list(await cursor.fetchall()) if cursor.description else []
        except psycopg.Error as exc:
            _raise_translated(exc)
            raise

    async def stream(
        self, sql: api.Sql, params: Mapping[str, Any] | None = None, *, batch: int = api.STREAM_BATCH
    ) -> AsyncGenerator[list[api.Row], None]:
        text, values = self._bound(sql, params or {})
        try:
            # A server-side cursor: the rows come `batch` at a time, never all at once. Named apart
            # from any other open in the same transaction.
            async with self._conn.cursor(name=f"memvm_stream_{next(_cursors)}") as cursor:
                await cursor.execute(text, values)
                while rows := await cursor.fetchmany(batch):
                    yield rows
        except psycopg.Error as exc:
            _raise_translated(exc)
            raise

    async def dangling_rows(self) -> int:
        """None past a commit: PostgreSQL checks its foreign keys itself (see Writes for those a
        write transaction deferred)."""
        return 0


# The columns of page_terms, in the order index_rows gives them.
_POSTING_COLUMNS = ("namespace", "stem", "page_rowid", "tf")


class Writes(Reads, api.Writes):
    def __init__(
        self, conn: psycopg.AsyncConnection[Any], namespace: str | None, now: float, stemmer: Stemmer
    ) -> None:
        super().__init__(conn, namespace, now)
        self._stemmer = stemmer
        self._pending: set[int] = set()

    async def execute(self, sql: api.Sql, /, **named: Any) -> None:
        await self.all(sql, **named)

    async def executemany(self, sql: Statement, rows: Iterable[Mapping[str, Any]]) -> None:
        text = sql.texts["postgresql"]
        bound = [self._bound(sql, row)[1] or {} for row in rows]
        if not bound:
            return
        try:
            # psycopg runs executemany in pipeline mode, which a cancellation in mid-flight leaves
            # broken (an AssertionError from its own bookkeeping, not the cancellation). So the
            # statement finishes, shielded, and the cancellation lands at the next step, where the
            # transaction is rolled back as for any other.
            with anyio.CancelScope(shield=True):
                async with self._conn.cursor() as cursor:
                    await cursor.executemany(text, bound)
        except psycopg.Error as exc:
            _raise_translated(exc)
            raise

    async def defer_foreign_keys(self) -> None:
        # Every foreign key of the schema is DEFERRABLE (postgres_schema).
        await self.execute("SET CONSTRAINTS ALL DEFERRED")

    async def dangling_rows(self) -> int:
        """1 when a deferred foreign key is broken (PostgreSQL names the first, not how many), else 0."""
        await self.execute("SAVEPOINT memvm_keys")
        try:
            await self.execute("SET CONSTRAINTS ALL IMMEDIATE")
        except psycopg.errors.ForeignKeyViolation:
            await self.execute("ROLLBACK TO SAVEPOINT memvm_keys")
            return 1
        await self.execute("RELEASE SAVEPOINT memvm_keys")
        # Checked; the keys of what is written next are checked at the commit again, together.
        await self.execute("SET CONSTRAINTS ALL DEFERRED")
        return 0

    async def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """COPY the rows in: far faster than one INSERT a row, and it fires the same triggers."""
        names = ", ".join(f'"{column}"' for column in columns)
        written = 0
        try:
            async with (
                self._conn.cursor() as cursor,
                cursor.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy,
            ):
                for written, row in enumerate(rows):  # noqa: B007 -- read after a failure
                    await copy.write_row(row)
        except (psycopg.IntegrityError, psycopg.DataError, psycopg.ProgrammingError) as exc:
            if (error := storage_error(exc)) is not None:
                raise error from exc
            raise api.RowRefused(_first_line(exc), row=_copied_row(exc, written)) from exc
        except psycopg.Error as exc:
            _raise_translated(exc)
            raise

    async def rows_imported(self) -> None:
        """Move the identity counters past the rows, and index every page, a batch at a time: the
        postings the engine's writes would have stored (see flush), COPYed in, as there are a
        few dozen a page."""
        for statement in MOVE_IDENTITIES:
            await self.execute(statement)
        async with aclosing(self.stream(SEARCHED_TEXTS, {})) as batches:
            async for texts in batches:
                lengths, terms = await anyio.to_thread.run_sync(index_rows, texts, self._stemmer)
                await self.executemany(SET_SEARCH_CHARS, lengths)
                await self.insert_rows("page_terms", _POSTING_COLUMNS, terms)

    async def index_pages(self, rowids: Sequence[int]) -> None:
        """Note the pages to index; they are indexed together when the transaction's work is done
        (`flush`), in a few statements however many pages an ingest wrote."""
        self._pending.update(rowids)

    async def flush(self) -> None:
        """Count each noted page's stems with the index's own tokenizer and store them in
        page_terms, with its searchable length: the postings BM25 reads, the same stems and counts
        SQLite's FTS5 index holds."""
        if not self._pending:
            return
        rowids = sorted(self._pending)
        self._pending.clear()
        await self.all_in(DELETE_TERMS_OF, rowids)
        texts = await self.all_in(SEARCHED_TEXTS_OF, rowids)
        lengths, terms = await anyio.to_thread.run_sync(index_rows, texts, self._stemmer)
        await self.executemany(SET_SEARCH_CHARS, lengths)
        if terms:
            await self.executemany(
                INSERT_TERMS, [dict(zip(_POSTING_COLUMNS, term, strict=True)) for term in terms]
            )


class Database(api.Database):
    """A pool of connections to one PostgreSQL database."""

    backend = "postgresql"

    def __init__(self, pool: AsyncConnectionPool[Any], url: str, config: EngineConfig, clock: Clock) -> None:
        self._pool = pool
        self.clock = clock
        self._config = config
        self._closed = False
        self._reader_slots = ReadSlots(config.read_connections)
        self._stemmer = Stemmer()
        self.path = shown(url)
        self.target = url
        self._changes = ChangeChannel(pool, url, _CONNECT_TIMEOUT_S)
        self.busy_retries = 0

    @classmethod
    async def open(cls, url: str, config: EngineConfig, clock: Clock, *, inspect: bool = False) -> "Database":
        """Connect (refusing with DatabaseRefused, saying why, when the server cannot be reached).

        Opening changes nothing on the server, so a database opened to `inspect` opens the same way.
        """
        if config.max_db_mb is not None:
            # The cap is a SQLite file's (max_page_count); a database server's disk is the server's.
            raise DatabaseRefused(
                "--max-db-mb caps a SQLite file and does not apply to PostgreSQL; limit the database "
                "server's disk (or its tablespace) instead, and leave --max-db-mb out"
            )
        try:
            probe = await psycopg.AsyncConnection.connect(url, connect_timeout=_CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise DatabaseRefused(
                f"cannot connect to PostgreSQL at {shown(url)}: {_first_line(exc)}"
            ) from exc
        await probe.close()
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            min_size=1,
            # Reads have their own share (read_slots); writes of different namespaces run side by side.
            max_size=config.read_connections + 4,
            kwargs={"autocommit": True, "row_factory": _rows, "connect_timeout": _CONNECT_TIMEOUT_S},
            configure=_configure,
            # A connection the server dropped (a restart, a failover, an idle timeout) is found and
            # replaced when taken, one round trip, rather than failing the caller's call.
            check=AsyncConnectionPool.check_connection,
            timeout=config.busy_timeout_ms / 1000 or 1.0,
            open=False,
        )
        await pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        return cls(pool, url, config, clock)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._changes.close()
        with anyio.CancelScope(shield=True):
            await self._pool.close()
        self._stemmer.close()

    async def diagnose(self) -> api.StorageReport:
        """The server's version, the database's size and its indexes (see postgres_doctor)."""
        return await postgres_doctor.server_report(self)

    async def check_search_index(self) -> str:
        return await postgres_doctor.search_index_verdict(self)

    async def backup(self, target: Path) -> api.BackupResult:
        raise BackupError(
            "memvm backup copies a SQLite file; back up a PostgreSQL database with pg_dump "
            "(see docs/postgres.md, Backups)"
        )

    async def _purge_now(self) -> bool:
        """VACUUM the tables a forget deleted from (see postgres_purge)."""
        if self._config.read_only:
            raise StorageReadOnly()
        try:
            async with self._pool.connection() as conn:
                # Cleared before the VACUUM starts: a delete committed after it marks again.
                await conn.execute(PURGE_STARTED.texts["postgresql"])
                try:
                    await postgres_purge.vacuum_purged(conn)
                except psycopg.Error:
                    await conn.execute(OWE_PURGE.texts["postgresql"])  # not purged after all
                    raise
        except (PoolTimeout, psycopg.Error) as exc:
            _raise_translated(exc)
            raise
        return True

    async def announce(self, namespace: str, change: str) -> None:
        await self._changes.announce(namespace, change)

    def on_change(self, deliver: Callable[[str, str], Awaitable[None]]) -> None:
        self._changes.listen(deliver)

    @asynccontextmanager
    async def read(self, namespace: str | None) -> AsyncIterator[Reads]:
        now = self.clock.now()
        async with (
            self._reader_slots.take(namespace),
            self._transaction(f"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; {_moment(now)}") as conn,
        ):
            yield Reads(conn, namespace, now)

    @asynccontextmanager
    async def write(self, namespace: str | None = None, *, removal: bool = False) -> AsyncIterator[Writes]:
        if self._config.read_only:
            raise StorageReadOnly()
        wait_ms = int(self._config.busy_timeout_ms)
        if namespace is None:
            locks = f"SELECT pg_advisory_xact_lock({_LOCK_CLASS}, 0)"
        else:
            locks = (
                f"SELECT pg_advisory_xact_lock_shared({_LOCK_CLASS}, 0), "
                f"pg_advisory_xact_lock({namespace_lock_key(namespace)})"
            )
        # The lock is waited for outside the shielded BEGIN, so a caller cancelled while it waits
        # stops waiting at once; the wait is bounded by lock_timeout, local to this transaction.
        now = self.clock.now()
        begin = f"BEGIN; SET LOCAL lock_timeout = {wait_ms}; {_moment(now)}"
        async with self._transaction(begin, commit=True) as conn:
            writes = Writes(conn, namespace, now, self._stemmer)
            await writes.all(locks)
            if namespace is not None and not removal and self._config.max_namespace_mb:
                await check_namespace_room(writes, namespace, self._config.max_namespace_mb)
            yield writes
            await writes.flush()

    @asynccontextmanager
    async def _transaction(self, begin: str, *, commit: bool = False) -> AsyncIterator[Any]:
        """A pooled connection inside one transaction, ended (shielded) however the body ends.

        A query cancelled mid-flight makes psycopg close its connection; a connection that could
        not be ended cleanly is closed, and the pool replaces it. The body's own exception is the
        one raised, never a failure to roll back after it.
        """
        try:
            pooled = self._pool.connection()
            conn = await pooled.__aenter__()
        except (PoolTimeout, psycopg.Error) as exc:
            _raise_translated(exc)
            raise
        try:
            try:
                await _shielded(conn, begin)
            except psycopg.Error as exc:
                await _end_quietly(conn, "ROLLBACK")
                _raise_translated(exc)
                raise
            try:
                yield conn
            except BaseException:
                await _end_quietly(conn, "ROLLBACK")
                raise
            try:
                await _shielded(conn, "COMMIT" if commit else "ROLLBACK")
            except psycopg.Error as exc:
                await _end_quietly(conn, "ROLLBACK")
                _raise_translated(exc)
                raise
        finally:
            with anyio.CancelScope(shield=True):
                await pooled.__aexit__(None, None, None)


def _moment(now: float) -> str:
    """The statement that gives a transaction its moment, which the live_pages and expired_pages
    views read (`memvm.now`); sent with BEGIN, in the same round trip. `now` is the clock's float,
    never input, so it is written into the text."""
    return f"SET LOCAL memvm.now = '{float(now)!r}'"


def _copied_row(exc: psycopg.Error, written: int) -> int | None:
    """Which row of a COPY the server refused ("COPY pages, line 3"), or, for a value the driver
    could not send, the one being written. No savepoint is taken to find out: a transaction with
    many subtransactions makes every later read of its own rows slow."""
    if exc.sqlstate is None:
        return written
    found = re.search(r"\bline (\d+)", exc.diag.context or "")
    return int(found.group(1)) - 1 if found else None


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    conn.adapters.register_loader("numeric", _Numbers)


async def _shielded(conn: psycopg.AsyncConnection[Any], sql: str) -> None:
    # A transaction statement cancelled half-way would leave the connection in a state the next
    # caller cannot see; let it finish.
    with anyio.CancelScope(shield=True):
        await conn.execute(sql)


async def _end_quietly(conn: psycopg.AsyncConnection[Any], sql: str) -> None:
    """End the transaction if the connection still can; else close it (the pool sees a closed
    connection when it comes back, and opens a fresh one instead)."""
    with anyio.CancelScope(shield=True):
        if not conn.closed:
            try:
                await conn.execute(sql)
                return
            except psycopg.Error:
                logger.debug("ending a transaction failed; closing its connection", exc_info=True)
        try:
            await conn.close()
        except psycopg.Error:
            logger.debug("closing a broken connection failed", exc_info=True)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
