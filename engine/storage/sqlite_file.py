"""The SQLite file itself: made private before SQLite first opens it, checked as memvm's and
whole, opened with memvm's pragmas (read-only where it must be), and held to its size cap.

The connections and transactions on it are sqlite_db.py's.
"""

import os
import sqlite3
from pathlib import Path, PurePath

import aiosqlite
from memvm.engine.config import EngineConfig
from memvm.engine.errors import DatabaseRefused

# "memv" in ASCII: marks a file as memvm's, so a foreign SQLite file is never migrated over.
APPLICATION_ID = 0x6D656D76

_UNREADABLE_WAL = (
    "its last writes are in its -wal file, which SQLite cannot read in a folder it may not write; "
    "copy the file with its -wal to a writable folder (or serve it there once) and open that"
)


async def pragma(conn: aiosqlite.Connection, sql: str) -> list[sqlite3.Row]:
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


def check_writable(target: str) -> None:
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


def create_private(target: str) -> None:
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


async def connect(
    target: str, config: EngineConfig, *, busy_ms: int, inspect: bool = False
) -> aiosqlite.Connection:
    """A connection with memvm's pragmas. One that only `inspect`s the file (doctor, export,
    backup) leaves `synchronous` alone: it makes nothing durable, and setting it reads the file,
    which may not be a database at all (doctor says so rather than refusing to look)."""
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
        await pragma(conn, f"PRAGMA busy_timeout={int(busy_ms)}")
        if not inspect:
            await pragma(conn, f"PRAGMA synchronous={config.synchronous.value}")
        await pragma(conn, "PRAGMA foreign_keys=ON")
        # What a delete or an update removes is overwritten with zeros, not left in free space:
        # `forget` promises the text is gone from the file (see sqlite_purge).
        await pragma(conn, "PRAGMA secure_delete=ON")
    except sqlite3.Error as exc:
        await conn.close()
        raise DatabaseRefused(f"not a usable SQLite database ({exc})") from exc
    return conn


async def cap_pages(writer: aiosqlite.Connection, cap_bytes: int) -> int:
    """Hold the file to `cap_bytes`; returns the quota in force, in bytes.

    max_page_count is per connection, and only the writer grows the file. SQLite never sets it
    below the file's size: a file already over the cap is held to the size it has, so it still
    opens, its reads go on, it never grows, and the room `forget` frees is used again.
    """
    page_size = int((await pragma(writer, "PRAGMA page_size"))[0][0])
    pages = (await pragma(writer, f"PRAGMA max_page_count={cap_bytes // page_size}"))[0][0]
    return max(cap_bytes, int(pages) * page_size)


async def check_file(conn: aiosqlite.Connection) -> None:
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
