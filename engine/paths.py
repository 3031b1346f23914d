"""Where the database lives when no --db names it, one answer for the server and the hooks, and
whether a path can name one at all."""

import os
import sys
from pathlib import Path

from memvm.engine.storage.open import local_file


def data_dir() -> Path:
    """memvm's folder in the per-user data directory of this platform."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    else:
        base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
    return base / "memvm"


def default_db_path() -> Path:
    """$MEMVM_DB, else memvm.db in the per-user data directory of this platform."""
    if env := os.environ.get("MEMVM_DB"):
        return Path(env)
    return data_dir() / "memvm.db"


def database_named(given: str | None) -> str:
    """The database a command works on: `--db` if given, else $MEMVM_DB, else the per-user default
    file. A PostgreSQL URL is kept exactly as written (a Path would fold its `//`); a file path has
    `~` expanded."""
    target = given or os.environ.get("MEMVM_DB") or str(default_db_path())
    file = local_file(target)
    return target if file is None else str(file.expanduser())


class DatabasePathError(Exception):
    """A --db that cannot name a database file; one line for the person running memvm."""


def check_db_path(db: Path, *, create_folder: bool) -> None:
    """Refuse a --db that is not a file (a device, a folder) or cannot be reached (a folder on the
    way this user may not enter), and make its folder when asked."""
    try:
        unusable = db.exists() and not db.is_file()
    except OSError as exc:  # Path.exists raises for what it cannot tell, such as EACCES
        raise DatabasePathError(f"cannot reach {db} ({exc.strerror})") from exc
    if unusable:
        # /dev/null opens as an empty database and fails later, deep inside SQLite.
        raise DatabasePathError(f"{db} is not a regular file; --db names a SQLite database file")
    if create_folder:
        try:
            # Private: the folder memvm makes holds the database of everything captured.
            db.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise DatabasePathError(f"cannot create the folder {db.parent} ({exc.strerror})") from exc
