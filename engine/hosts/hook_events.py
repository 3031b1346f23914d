"""Host hook events already handled, so that a replayed event adds nothing twice.

The answer is kept only for events whose answer is a decision (a pre-tool deny): a replay gets
the same decision. Recalled context is not kept here, so that forgetting a page leaves no copy.

Where the host gives a call no id of its own, the hooks tell a replay from a new identical call
by what the session has seen of that call (hooks/replays.py): how many of its outcomes were
recorded, and whether an event whose digest begins a given way was handled.
"""

import zlib
from dataclasses import dataclass
from typing import Any

from memvm.engine.guards.literals import call_hash
from memvm.engine.kept_logs import keep_newest_if_due
from memvm.engine.models.hosts import HandledHookEvent
from memvm.engine.redacted_writes import Redaction
from memvm.engine.storage.api import Database, Reads, Writes
from memvm.engine.storage.statements import statement

_GET = statement(
    "hook_events.get",
    "SELECT event, answer FROM hook_events WHERE namespace = :namespace AND digest = :digest",
)

# Digests are lowercase hex: every one beginning with a prefix sorts below the prefix and "g".
_BEGINNING = statement(
    "hook_events.beginning",
    """
SELECT 1 FROM hook_events WHERE namespace = :namespace AND digest >= :prefix AND digest < :past_prefix LIMIT 1
""",
)

_OUTCOMES = statement(
    "hook_events.outcomes",
    """
SELECT count(*) AS n FROM tool_calls
WHERE namespace = :namespace AND session = :session AND call_hash = :call_hash
""",
)

_RECORD = statement(
    "hook_events.record",
    """
INSERT INTO hook_events (namespace, digest, host, session, event, answer, at)
VALUES (:namespace, :digest, :host, :session, :event, :answer, :now)
ON CONFLICT (namespace, digest) DO NOTHING
""",
)


async def handled_event(conn: Reads, namespace: str, digest: str) -> HandledHookEvent | None:
    """The event with this digest as handled before, or None when it is new."""
    row = await conn.one(_GET, namespace=namespace, digest=digest)
    return HandledHookEvent(event=row["event"], answer=row["answer"]) if row else None


async def handled_with_prefix(conn: Reads, namespace: str, prefix: str) -> bool:
    """Whether an event whose digest begins with `prefix` (lowercase hex) was handled."""
    found = await conn.one(_BEGINNING, namespace=namespace, prefix=prefix, past_prefix=prefix + "g")
    return found is not None


async def outcomes_of(conn: Reads, namespace: str, session: str, tool: str, args: Any) -> int:
    """How many outcomes of the call of `tool` with `args` the session has recorded."""
    row = await conn.one(_OUTCOMES, namespace=namespace, session=session, call_hash=call_hash(tool, args))
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
    await conn.execute(
        _RECORD,
        namespace=namespace,
        digest=digest,
        host=host,
        session=session,
        event=event,
        answer=answer,
        now=now,
    )
    # Events carry no sequence; their digest, hashed, picks the one in so many that trims.
    await keep_newest_if_due(conn, "hook_events", (namespace,), zlib.crc32(digest.encode()))


@dataclass(frozen=True)
class HookEvents:
    """The hooks' record of events, as the engine offers it: each call one transaction of the
    namespace, what is recorded redacted as every write is."""

    db: Database
    redaction: Redaction

    async def handled(self, *, namespace: str, digest: str) -> HandledHookEvent | None:
        """The event with this digest, if it was handled before."""
        async with self.db.read(namespace) as conn:
            return await handled_event(conn, namespace, digest)

    async def handled_with_prefix(self, *, namespace: str, prefix: str) -> bool:
        """Whether an event whose digest begins with `prefix` (lowercase hex) was handled."""
        async with self.db.read(namespace) as conn:
            return await handled_with_prefix(conn, namespace, prefix)

    async def outcomes_recorded(self, *, namespace: str, session: str, tool: str, args: Any) -> int:
        """How many outcomes of the call of `tool` with `args` `session` has recorded: its
        completed calls."""
        args = self.redaction.value(args)  # as record_tool_outcome stores them, before its call_hash
        async with self.db.read(namespace) as conn:
            return await outcomes_of(conn, namespace, session, tool, args)

    async def record(
        self, *, namespace: str, host: str, session: str, digest: str, event: str, answer: str | None = None
    ) -> None:
        """Mark an event handled (a second record of the same digest changes nothing)."""
        async with self.db.write(namespace) as conn:
            await record_event(
                conn,
                namespace=namespace,
                host=host,
                session=session,
                digest=digest,
                event=self.redaction.text(event),
                answer=self.redaction.optional(answer),
                now=conn.now,
            )
