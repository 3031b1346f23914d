"""`memvm backup`: a consistent copy of a live database file, taken while servers write to it.

SQLite's online backup, in one step: the copy is one read snapshot, so it holds every write
committed before the backup began and none half-done, and writers in WAL mode are never blocked.
The copy goes to a temporary name beside the target and is renamed into place only once it has
passed its integrity check, so a backup that fails never leaves a file that looks like one.
"""

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from memvm.engine.db import connect_blocking


class BackupError(Exception):
    """A backup that cannot be made; one line for the person running it."""


@dataclass(frozen=True)
class BackupResult:
    path: str
    bytes: int
    pages: int


def backup(source: str | Path, target: str | Path) -> BackupResult:
    """Copy the database at `source` to the new file `target`."""
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise BackupError(f"there is no database at {source}")
    if target.exists():
        raise BackupError(f"{target} already exists; name a new file")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    src = connect_blocking(source)
    try:
        dst = sqlite3.connect(partial, isolation_level=None)
        try:
            src.backup(dst)  # pages=-1: the whole file from one snapshot
            # The copy keeps WAL mode in its header; fold it into one self-contained file.
            dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            verdict = [row[0] for row in dst.execute("PRAGMA quick_check")]
            pages = dst.execute("SELECT count(*) FROM pages").fetchone()[0]
        finally:
            dst.close()
        if verdict != ["ok"]:
            raise BackupError(f"the copy failed its check ({verdict[0]}); the database itself may be damaged")
        os.replace(partial, target)
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"cannot back up {source}: {exc}") from exc
    finally:
        src.close()
        partial.unlink(missing_ok=True)
        Path(str(partial) + "-wal").unlink(missing_ok=True)
        Path(str(partial) + "-shm").unlink(missing_ok=True)
    return BackupResult(path=str(target), bytes=target.stat().st_size, pages=pages)
