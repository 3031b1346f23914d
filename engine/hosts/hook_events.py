"""Host hook events already handled, so that a replayed event adds nothing twice.

The answer is kept only for events whose answer is a decision (a pre-tool deny): a replay gets
the same decision. Recalled context is not kept here, so that forgetting a page leaves no copy.
"""

from memvm.engine.models import HandledHookEvent
from memvm.engine.storage.api import Reads, Writes

_GET = "SELECT event, answer FROM hook_events WHERE namespace = ? AND digest = ?"

_RECORD = """
INSERT INTO hook_events (namespace, digest, host, session, event, answer, at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (namespace, digest) DO NOTHING
"""


async def handled_event(conn: Reads, namespace: str, digest: str) -> HandledHookEvent | None:
    """The event with this digest as handled before, or None when it is new."""
    row = await conn.one(_GET, (namespace, digest))
    return HandledHookEvent(event=row["event"], answer=row["answer"]) if row else None


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
