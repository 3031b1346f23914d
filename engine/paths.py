"""Where the database lives when no --db names it: one answer for the server and the hooks."""

import os
import sys
from pathlib import Path

from memvm.engine.storage.open import is_postgres_url


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
    if is_postgres_url(target) or target == ":memory:":
        return target
    return str(Path(target).expanduser())
