"""Hook events that memvm could not handle, kept beside the database for `memvm doctor`.

When a hook answers "go on without memvm" (the database was busy, full or broken, the event
could not be read, the background process did not answer), nothing about it can be written to the
database, which is often the very thing that failed. So each such event is one JSON line in a
file beside it: when, which host and session, which event, whether it was a pre-tool check (a
guard that failed open) and why. Standard library only: the hook's fast client writes it too.
"""

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvm.engine.paths import default_db_path
from memvm.engine.redaction import redact
from memvm.engine.storage.open import is_postgres_url

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
    if is_postgres_url(db):
        digest = hashlib.sha256(str(db).encode()).hexdigest()[:16]
        return default_db_path().parent / f"postgresql-{digest}-hooks-skipped.jsonl"
    path = Path(db)
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists() and path.stat().st_size > _MAX_BYTES:
            _keep_newest_half(path)
        # O_APPEND: lines from hooks running at once never interleave within a line.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = os.fstat(fd).st_size
            # A line left unfinished (a disk that filled) must not swallow this one.
            lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
            os.write(fd, lead + (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def _keep_newest_half(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    kept = lines[len(lines) // 2 :]
    spare = path.with_name(path.name + ".tmp")
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"".join(kept))
    finally:
        os.close(fd)
    os.replace(spare, path)


def skipped_events(db: str | Path) -> list[SkippedEvent]:
    """The journal's events, oldest first; lines that do not parse are passed over."""
    try:
        raw = journal_path(db).read_bytes()
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
