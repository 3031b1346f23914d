"""Hook events that memvm could not handle, kept beside the database for `memvm doctor`.

When a hook answers "go on without memvm" (the database was busy, full or broken, the event
could not be read, the background process did not answer), nothing about it can be written to the
database, which is often the very thing that failed. So each such event is one JSON line in a
file beside it: when, which host and session, which event, whether it was a pre-tool check (a
guard that failed open) and why. Standard library only: the hook's fast client writes it too.

The journal's folder may be one others can write to, so what sits at the journal's path is opened
as a regular file or not at all (engine/hosts/host_files.py): a link planted there is not
followed, and a FIFO neither holds a hook nor `memvm doctor`. When the journal is cut down, its
newest half goes to a new file of a name no one could have guessed, which then replaces it.
"""

import contextlib
import hashlib
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvm.engine.hosts.host_files import open_regular
from memvm.engine.paths import default_db_path
from memvm.engine.redaction import redact
from memvm.engine.storage.open import local_file

# Past this size the oldest half of the lines are dropped: the journal says what is failing
# lately, and must never fill a disk that may already be full.
_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class SkippedEvent:
    at: float
    host: str
    session: str
    event: str
    guard: bool
    reason: str


def journal_path(db: str | Path) -> Path:
    """Beside a SQLite file; for a database server, in the per-user data directory, one per URL."""
    path = local_file(db)
    if path is None:
        digest = hashlib.sha256(str(db).encode()).hexdigest()[:16]
        return default_db_path().parent / f"postgresql-{digest}-hooks-skipped.jsonl"
    return path.with_name(path.name + "-hooks-skipped.jsonl")


def record_skipped(db: str | Path, *, host: str, session: str, event: str, guard: bool, reason: str) -> None:
    """Append one skipped event; best effort, since the disk itself may be what failed."""
    # Whatever an event carried that reaches the journal is redacted, as everything memvm stores.
    line = json.dumps(
        {
            "at": time.time(),
            "host": host,
            "session": redact(session),
            "event": redact(event),
            "guard": guard,
            "reason": redact(reason),
        }
    )
    path = journal_path(db)
    entry = (line + "\n").encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # O_APPEND: lines from hooks running at once never interleave within a line.
        fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, follow_links=False)
        try:
            size = os.fstat(fd).st_size
            if size > _MAX_BYTES:
                _replace_by_newest_half(fd, size, path, entry)
            else:
                os.write(fd, _lead(fd, size) + entry)
        finally:
            os.close(fd)
    except OSError:
        pass


def _lead(fd: int, size: int) -> bytes:
    # A line left unfinished (a disk that filled) must not swallow the next one.
    return b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""


def _replace_by_newest_half(fd: int, size: int, path: Path, entry: bytes) -> None:
    """The journal read through `fd` cut to its newest half, then `entry`, written to a new file
    that replaces the one at `path` (a link planted there is replaced, never written through)."""
    lines = os.pread(fd, size, 0).splitlines(keepends=True)
    kept = b"".join(lines[len(lines) // 2 :])
    spare_fd, spare = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(spare_fd, "wb") as spare_file:
            spare_file.write(kept + (b"\n" if kept and not kept.endswith(b"\n") else b"") + entry)
        os.replace(spare, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(spare)
        raise


def skipped_events(db: str | Path) -> list[SkippedEvent]:
    """The journal's events, oldest first; lines that do not parse are passed over."""
    try:
        with os.fdopen(open_regular(journal_path(db), os.O_RDONLY, follow_links=False), "rb") as file:
            raw = file.read()
    except OSError:
        return []
    found: list[SkippedEvent] = []
    for line in raw.splitlines():
        entry = _entry(line)
        if entry is not None:
            found.append(entry)
    return found


def _entry(line: bytes) -> SkippedEvent | None:
    try:
        data: Any = json.loads(line)
        at = float(data["at"])
        if not math.isfinite(at) or not 0 <= at < 2**33:
            return None
        return SkippedEvent(
            at=at,
            host=str(data["host"]),
            session=str(data["session"]),
            event=str(data["event"]),
            guard=data["guard"] is True,
            reason=str(data["reason"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
