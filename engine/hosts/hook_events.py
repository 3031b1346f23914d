"""Host hook events already handled, so that a replayed event adds nothing twice.

The answer is kept only for events whose answer is a decision (a pre-tool deny): a replay gets
the same decision. Recalled context is not kept here, so that forgetting a page leaves no copy.

Where the host gives a call no id of its own, the hooks tell a replay from a new identical call
by what the session has seen of that call (hooks/replays.py): how many of its outcomes were
recorded, and whether an event whose digest begins a given way was handled.
"""

import zlib
from typing import Any

from memvm.engine.guards.literals import call_hash
from memvm.engine.kept_logs import keep_newest_if_due
from memvm.engine.models.hosts import HandledHookEvent
from memvm.engine.storage.api import Reads, Writes

_GET = "SELECT event, answer FROM hook_events WHERE namespace = ? AND digest = ?"

# Digests are lowercase hex: every one beginning with a prefix sorts below the prefix and "g".
_BEGINNING = "SELECT 1 FROM hook_events WHERE namespace = ? AND digest >= ? AND digest < ? LIMIT 1"

_OUTCOMES = "SELECT count(*) AS n FROM tool_calls WHERE namespace = ? AND session = ? AND call_hash = ?"

_RECORD = """
INSERT INTO hook_events (namespace, digest, host, session, event, answer, at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (namespace, digest) DO NOTHING
"""


async def handled_event(conn: Reads, namespace: str, digest: str) -> HandledHookEvent | None:
    """The event with this digest as handled before, or None when it is new."""
    row = await conn.one(_GET, (namespace, digest))
    return HandledHookEvent(event=row["event"], answer=row["answer"]) if row else None


async def handled_with_prefix(conn: Reads, namespace: str, prefix: str) -> bool:
    """Whether an event whose digest begins with `prefix` (lowercase hex) was handled."""
    return await conn.one(_BEGINNING, (namespace, prefix, prefix + "g")) is not None


async def outcomes_of(conn: Reads, namespace: str, session: str, tool: str, args: Any) -> int:
    """How many outcomes of the call of `tool` with `args` the session has recorded."""
    row = await conn.one(_OUTCOMES, (namespace, session, call_hash(tool, args)))
    return int(row["n"]) if row else 0


async def record_event(
    conn: Writes,
    *,
    namespace: str,
    host: str,
    session: str,
    digest: str,
    event: str,
    answer: str | None,
    now: float,
) -> None:
    await conn.execute(_RECORD, (namespace, digest, host, session, event, answer, now))
    # Events carry no sequence; their digest, hashed, picks the one in so many that trims.
    await keep_newest_if_due(conn, "hook_events", (namespace,), zlib.crc32(digest.encode()))
