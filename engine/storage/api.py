"""The one way the engine reaches storage: a read transaction, a write transaction, and rows.

Both backends (SQLite in `sqlite_db`, PostgreSQL in `postgres_db`) implement these, so paging,
guards, procedures and the operator's commands (export, import, doctor, backup) are written once.
Statements are written once too, in the SQL both accept, as named statements with `:name`
parameters (statements.py); what cannot be said the same way on both (scalar GREATEST, a
snippet's window, the full-text index, the catalogue of tables) is asked of the `dialect`, and
what only one backend has to do (its file or server checks, its own backup, its keys deferred and
checked) is a method of its objects here."""

import functools
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memvm.engine.clock import Clock
from memvm.engine.storage.dialects import SqlDialect
from memvm.engine.storage.purge_queue import IS_PURGE_OWED, PurgeQueue
from memvm.engine.storage.statements import Statement, Template, in_list

if TYPE_CHECKING:
    from memvm.engine.storage.fulltext import FullText

# What a transaction runs: a registered Statement, or SQL text that takes no parameters.
Sql = str | Statement

# Rows a stream (Reads.stream) hands over at once.
STREAM_BATCH = 500


class Row(Protocol):
    """A result row, read by position or by column name; `dict(row)` gives its columns."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class Dialect(SqlDialect):
    """What the two backends' SQL says differently (dialects.py), and their full-text index."""

    fulltext: "FullText"
    # Every stored column of every table (generated ones left out), tables in name order (as
    # SQLite's BINARY sorts), columns in their table's order: (table, column, place in the primary
    # key or 0, declared type as INTEGER, REAL, TEXT or another name, NOT NULL as 1 or 0).
    columns: str

    @abstractmethod
    def own_table(self, name: str) -> bool:
        """Whether the backend keeps the table `name` for itself (its full-text index, its
        catalogue): never memory, never exported."""


class Reads(ABC):
    """An open transaction, for reading: every query sees the same snapshot.

    A read transaction (`Database.read`) holds one snapshot for all of its queries, so reads that
    belong together never see a write land between them; inside a write transaction (`Writes`)
    they also see that transaction's own writes.

    A transaction knows the namespace it was opened for (None: the whole database) and the moment
    it began, `now`: the moment its `live_pages` and `expired_pages` views compare expiry with, so
    that every query in it agrees which pages are gone, and none has to say so itself.
    """

    dialect: Dialect
    namespace: str | None
    now: float

    @abstractmethod
    async def all(self, sql: Sql, /, **named: Any) -> list[Row]:
        """The rows of `sql`: a Statement with its `named` parameters (statements.py), or text
        that takes none, run as written (a catalogue read, a control statement, a migration's)."""

    async def one(self, sql: Sql, /, **named: Any) -> Row | None:
        rows = await self.all(sql, **named)
        return rows[0] if rows else None

    @abstractmethod
    def stream(
        self, sql: Sql, params: Mapping[str, Any] | None = None, *, batch: int = STREAM_BATCH
    ) -> AsyncGenerator[list[Row], None]:
        """The rows of `sql` (with `params`, a Statement's), `batch` at a time, as the
        transaction's snapshot holds them: memory stays flat however many rows there are (an
        export's). Read it to the end, or close it (`contextlib.aclosing`) before the transaction
        ends."""

    @abstractmethod
    async def dangling_rows(self) -> int:
        """How many rows point at rows that are not there (a foreign key broken), counting those
        whose check this transaction deferred; at least 1 when the backend cannot tell how many."""

    async def all_in(
        self, sql: Template, values: Sequence[Any], /, parts: Mapping[str, str] | None = None, **named: Any
    ) -> list[Row]:
        """Run `sql`, whose `{marks}` is an IN list, for `values` in chunks, with its `named`
        parameters and its other slots filled with `parts`."""
        rows: list[Row] = []
        for start in range(0, len(values), IN_CHUNK):
            marks, listed = in_list(values[start : start + IN_CHUNK])
            rows.extend(await self.all(sql.fill(marks=marks, **(parts or {})), **named, **listed))
        return rows

    def _bound(self, sql: Sql, named: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """The text of `sql` for this backend and its parameters: a Statement's, checked to be its
        own; text runs as written, and takes none."""
        if isinstance(sql, Statement):
            sql.check(named)
            return sql.texts[self.dialect.name], dict(named)
        if named:
            raise TypeError("SQL text runs as written, without parameters: register a statement for it")
        return sql, None


class Writes(Reads):
    """The connection of one open write transaction: reads see its own writes."""

    @abstractmethod
    async def execute(self, sql: Sql, /, **named: Any) -> None: ...

    @abstractmethod
    async def executemany(self, sql: Statement, rows: Iterable[Mapping[str, Any]]) -> None:
        """Run `sql` once per row, each a mapping of its parameters."""

    @abstractmethod
    async def index_pages(self, rowids: Sequence[int]) -> None:
        """Bring the full-text index up to date for pages whose searchable text was just written
        (content, speaker or key). SQLite's triggers do this themselves."""

    @abstractmethod
    async def defer_foreign_keys(self) -> None:
        """Check foreign keys at the commit (or at `dangling_rows`), not row by row: an import
        brings rows table by table, not in the order their keys need."""

    @abstractmethod
    async def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert rows that carry their own keys, as an import brings them; RowRefused, in the
        database's words and naming the row where it can, when one does not fit its table (its
        type, a constraint), after which only a rollback is left. `table` and `columns` are names
        from the catalogue (`Dialect.columns`), never from input."""

    @abstractmethod
    async def rows_imported(self) -> None:
        """Bring up to date what the backend derives from rows `insert_rows` wrote with their own
        keys: on PostgreSQL its identity counters and the search postings of every page; SQLite's
        triggers and rowids need nothing."""


class RowRefused(Exception):
    """A row that does not fit its table; the message is the database's own, one line. `row` is
    its place among the rows given to insert_rows, when the backend can tell."""

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.row = row


@dataclass
class StorageReport:
    """What a backend finds of its own storage for `memvm doctor`: the facts it reports (fields of
    doctor's JSON), its own checks and the problems they found, and whether the memory in it can be
    read at all (a file that failed its integrity check, or another program's, cannot)."""

    # What the database is, as doctor's report names it ("SQLite 3.40.1"), and its size, in words.
    engine: str
    size: str
    facts: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    readable: bool = True


@dataclass(frozen=True)
class BackupResult:
    path: str
    bytes: int
    pages: int


class Database(ABC):
    """The connections to one database: SQLite file, private in-memory database, or PostgreSQL."""

    backend: str
    # Where it is, as it may be printed (a URL without its password); never shown to a client.
    path: str
    # Where it is, as given (a URL with its password): for the operator's commands to reconnect.
    target: str
    # Times a write found the storage locked by another process and tried again; never reset.
    busy_retries: int
    # What each transaction takes as its moment (Reads.now).
    clock: Clock

    @abstractmethod
    def read(self, namespace: str | None) -> AbstractAsyncContextManager[Reads]:
        """One read transaction of `namespace`, which takes its turn among that namespace's reads
        (see read_slots); None only for a read of the whole database (migrations, maintenance)."""

    @abstractmethod
    def write(
        self, namespace: str | None = None, *, removal: bool = False
    ) -> AbstractAsyncContextManager[Writes]:
        """One short write transaction: commits on success, rolls back and re-raises on error.

        Writes of one `namespace` are serialised; a write without one (migrations, maintenance)
        excludes every other write. A `removal` (forget, deleting expired pages) frees room, so a
        quota on the database never refuses it.
        """

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def diagnose(self) -> StorageReport:
        """Check the storage itself, reading only: what `memvm doctor` reports before the memory."""

    @abstractmethod
    async def check_search_index(self) -> str:
        """Whether the full-text index agrees with the pages: "ok", "ok (...)", or what disagrees."""

    @abstractmethod
    async def backup(self, target: Path) -> BackupResult:
        """A consistent copy of the live database in the new file `target`, or BackupError saying
        why it cannot be made (on PostgreSQL: pg_dump's work)."""

    async def purge_deleted(self) -> bool:
        """After a delete has committed, take the deleted rows' text out of storage as far as the
        backend allows, outside any write transaction; False if something kept it from finishing.

        SQLite: the full-text index merged and the WAL emptied, so the text is in neither the file
        nor its WAL. PostgreSQL: the tables a page's text and derived rows live in vacuumed. One
        purge runs at a time, shared by the callers that asked before it started (purge_queue).
        """
        return await self._purges.run(self._purge_now)

    @functools.cached_property
    def _purges(self) -> PurgeQueue:
        return PurgeQueue()

    @abstractmethod
    async def _purge_now(self) -> bool:
        """One purge, as `purge_deleted` describes; it clears `purge_owed` as it starts."""

    async def purge_owed(self) -> bool:
        """Whether a delete has committed since the last purge finished (see purge_queue)."""
        async with self.read(None) as conn:
            return await conn.one(IS_PURGE_OWED) is not None

    async def announce(self, namespace: str, change: str) -> None:
        """Tell the other processes serving this database that `change` happened in `namespace`.

        Only where several processes serve one database and must tell each other (PostgreSQL);
        on SQLite each process hears only its own clients' changes, as before.
        """
        return None

    def on_change(self, deliver: Callable[[str, str], Awaitable[None]]) -> None:
        """Have `deliver(namespace, change)` called for each change another process announces."""
        return None


# Values per IN list: far below either backend's parameter limit. The SQL gets a count of
# placeholders, never a value from input.
IN_CHUNK = 400
