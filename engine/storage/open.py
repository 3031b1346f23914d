"""Which backend a database name means: a `postgresql://` URL, or else a SQLite file path.

Light on purpose: `memvm hook` asks it before deciding anything, and starts in milliseconds; the
backends are imported only when one is opened.
"""

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


async def open_database(target: str | Path, config: "EngineConfig", clock: Clock | None = None) -> "Database":
    """Open the database `target` names; refuse, saying why, one that cannot be used. Its
    transactions take their moment from `clock` (the system's, unless given)."""
    clock = clock or SystemClock()
    if not is_postgres_url(target):
        from memvm.engine.storage import sqlite_db

        return await sqlite_db.Database.open(target, config, clock)
    try:
        # Imported only here: the driver is an optional extra, and SQLite users never load it.
        from memvm.engine.storage import postgres_db
    except ImportError as exc:
        raise DatabaseRefused(
            "PostgreSQL needs its driver, which is not installed: pip install 'memvm[postgres]'"
        ) from exc
    return await postgres_db.Database.open(str(target), config, clock)
