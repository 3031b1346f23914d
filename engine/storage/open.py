"""Which backend a database name means: a `postgresql://` URL, or else a SQLite file path.

The one place outside the backends that asks: everything above storage opens a database here and
talks to the object it gets. Light on purpose: `memvm hook` asks it before deciding anything, and
starts in milliseconds; the backends are imported only when one is opened.
"""

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memvm.engine.clock import Clock, SystemClock
from memvm.engine.errors import DatabaseRefused

if TYPE_CHECKING:
    from memvm.engine.config import EngineConfig
    from memvm.engine.storage.api import Database

URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(URL_SCHEMES)


def local_file(target: str | Path) -> Path | None:
    """The file on this machine a database name means, or None when the database is served (a
    PostgreSQL URL) or held in memory: what the commands check, create or put beside it, asked
    without asking which backend it is."""
    if is_postgres_url(target) or str(target) == ":memory:":
        return None
    return Path(target)


def shown(target: str | Path) -> str:
    """The database as it may be printed or logged: a URL without its password."""
    if not is_postgres_url(target):
        return str(target)
    parts = urlsplit(str(target))
    if parts.password is None:
        return str(target)
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def may_write(target: str | Path) -> bool:
    """Whether this process may write the database: for a file, the file and its folder (where
    SQLite keeps its -wal and -shm); a served database says so itself when a write comes."""
    file = local_file(target)
    if file is None:
        return True
    path = os.path.abspath(file)
    return os.access(path, os.W_OK) and os.access(os.path.dirname(path), os.W_OK)


def failure_types() -> tuple[type[Exception], ...]:
    """The errors a backend's driver raises when the database itself says no (a damaged file, a
    dropped server), for the commands that report them in one line without importing a driver.
    The engine's own storage errors (StorageError) are not among them."""
    import sqlite3

    found: tuple[type[Exception], ...] = (sqlite3.Error,)
    if (psycopg := sys.modules.get("psycopg")) is not None:
        # Loaded only when a PostgreSQL database was opened: none of its errors can be raised before.
        found += (psycopg.Error,)
    return found


@asynccontextmanager
async def opened_database(
    target: str | Path, config: "EngineConfig | None" = None, *, inspect: bool = False
) -> AsyncIterator["Database"]:
    """The database `target` names, open for the body and closed after (see open_database)."""
    from memvm.engine.config import EngineConfig

    db = await open_database(target, config or EngineConfig(), inspect=inspect)
    try:
        yield db
    finally:
        await db.close()


async def open_database(
    target: str | Path, config: "EngineConfig", clock: Clock | None = None, *, inspect: bool = False
) -> "Database":
    """Open the database `target` names; refuse, saying why, one that cannot be used. Its
    transactions take their moment from `clock` (the system's, unless given).

    `inspect` opens it as it is, for `memvm doctor`: nothing is made or changed (no file created,
    no journal mode set), and what it holds is not refused (doctor says what is wrong instead).
    """
    clock = clock or SystemClock()
    if not is_postgres_url(target):
        from memvm.engine.storage import sqlite_db

        return await sqlite_db.Database.open(target, config, clock, inspect=inspect)
    try:
        # Imported only here: the driver is an optional extra, and SQLite users never load it.
        from memvm.engine.storage import postgres_db
    except ImportError as exc:
        raise DatabaseRefused(
            "PostgreSQL needs its driver, which is not installed: pip install 'memvm[postgres]'"
        ) from exc
    return await postgres_db.Database.open(str(target), config, clock, inspect=inspect)
