"""`memvm backup`: a consistent copy of a live database file, taken while servers write to it.

SQLite's online backup, in one step: the copy is one read snapshot, so it holds every write
committed before the backup began and none half-done, and writers in WAL mode are never blocked.
The copy goes to `FILE.partial` beside the target and is renamed into place only once it has
passed its integrity check, so a backup that fails never leaves a file that looks like one. The
partial name is claimed, never taken over: one that exists (a backup running, or one killed with
SIGKILL) is named and left alone. A backup that fails or is stopped removes its own.
"""

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from memvm.engine.storage.sqlite_file import connect_blocking, writable


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
    partial = _claim_partial(target)
    try:
        pages = _copy(source, partial)
        os.replace(partial, target)
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"cannot back up {source}: {exc}") from exc
    finally:
        # Only this backup's own partial file: it was created here, never found.
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)
    return BackupResult(path=str(target), bytes=target.stat().st_size, pages=pages)


def _claim_partial(target: Path) -> Path:
    """Create `target`.partial, refusing one that exists: it may be another backup's, still running."""
    partial = target.with_name(target.name + ".partial")
    try:
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise BackupError(
            f"{partial} exists: another backup to {target.name} is running, or one was killed; "
            "delete it if none is running"
        ) from None
    except OSError as exc:
        raise BackupError(f"cannot write {target} ({exc.strerror})") from exc
    return partial


def _copy(source: Path, partial: Path) -> int:
    """Copy `source` into the empty file `partial`, fold its WAL in and check it; returns its pages."""
    src = connect_blocking(source, read_only=not writable(source))
    try:
        dst = sqlite3.connect(partial, isolation_level=None)
        try:
            src.backup(dst)  # pages=-1: the whole file from one snapshot
            # The copy keeps WAL mode in its header; fold it into one self-contained file.
            dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            verdict = [row[0] for row in dst.execute("PRAGMA quick_check")]
            pages: int = dst.execute("SELECT count(*) FROM pages").fetchone()[0]
        finally:
            dst.close()
    finally:
        src.close()
    if verdict != ["ok"]:
        raise BackupError(f"the copy failed its check ({verdict[0]}); the database itself may be damaged")
    return pages
