"""`memvm backup` of a SQLite file: a consistent copy of the live file, taken while servers write.

SQLite's online backup, in one step: the copy is one read snapshot, so it holds every write
committed before the backup began and none half-done, and writers in WAL mode are never blocked.
The copy goes to `FILE.partial` beside the target and is renamed into place only once it has
passed its integrity check, so a backup that fails never leaves a file that looks like one. The
partial name is claimed, never taken over: one that exists (a backup running, or one killed with
SIGKILL) is named and left alone. A backup that fails or is stopped removes its own.
"""

import asyncio
import os
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from memvm.engine.errors import BackupError
from memvm.engine.storage.api import BackupResult
from memvm.engine.storage.sqlite_file import pragma

T = TypeVar("T")


async def backup(source: aiosqlite.Connection, path: Path, target: Path) -> BackupResult:
    """Copy the database `source` (the file at `path`) to the new file `target`."""
    # Claimed, renamed and removed on the loop's own thread, a few system calls each: an await
    # between creating the file and the `try` that removes it would let a cancellation (Ctrl-C,
    # SIGTERM) land there and leave the file behind, and one in the `finally` could skip the
    # removal; one after the rename would end a backup that was made as cancelled.
    partial = _claim_partial(target)
    try:
        pages = await _to_the_end(_copy(source, partial))
        size = _put_in_place(partial, target)
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"cannot back up {path}: {exc}") from exc
    finally:
        _remove_partial(partial)
    return BackupResult(path=str(target), bytes=size, pages=pages)


async def _to_the_end(step: Coroutine[Any, Any, T]) -> T:
    """Await `step` to its end even when cancelled meanwhile (Ctrl-C, SIGTERM), then let the
    cancellation go on.

    A cancelled await of an aiosqlite call does not stop the call: it goes on in the connection's
    thread, and can make the partial file again after it was removed. So the copy is waited for
    whole, and only then is the partial file removed.
    """
    task = asyncio.ensure_future(step)
    cancelled: BaseException | None = None
    while not task.done():
        try:
            await asyncio.wait([task])  # which, cancelled, leaves the task running
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    return task.result()


def _put_in_place(partial: Path, target: Path) -> int:
    """Rename the checked copy to `target`; its size."""
    os.replace(partial, target)
    return target.stat().st_size


def _remove_partial(partial: Path) -> None:
    # Only this backup's own partial file: it was created here, never found.
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)


def _claim_partial(target: Path) -> Path:
    """Create `target`.partial, refusing one that exists: it may be another backup's, still running;
    and refuse a `target` that exists."""
    if target.exists():
        raise BackupError(f"{target} already exists; name a new file")
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


async def _copy(source: aiosqlite.Connection, partial: Path) -> int:
    """Copy `source` into the empty file `partial`, fold its WAL in and check it; returns its pages."""
    # The backup runs on the source's thread, which then uses this connection too.
    copy = await aiosqlite.connect(partial, isolation_level=None, check_same_thread=False)
    try:
        await source.backup(copy, pages=-1)  # the whole file from one snapshot
        # The copy keeps WAL mode in its header; fold it into one self-contained file.
        await pragma(copy, "PRAGMA wal_checkpoint(TRUNCATE)")
        verdict = [row[0] for row in await pragma(copy, "PRAGMA quick_check")]
        pages = int((await pragma(copy, "SELECT count(*) FROM pages"))[0][0])
    finally:
        await copy.close()
    if verdict != ["ok"]:
        raise BackupError(f"the copy failed its check ({verdict[0]}); the database itself may be damaged")
    return pages
