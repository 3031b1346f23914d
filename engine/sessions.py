"""Sessions and their turn counters.

A turn advances when the host calls begin_turn, when a user message is ingested, or, for hosts
that never mark turns, on the first call after `turn_idle_seconds` of silence in the session. The
per-turn fault allowance resets with each new turn.
"""

import aiosqlite
from memvm.engine.db import Database, Row, fetchone
from memvm.engine.models import SessionState

_ENSURE = """
INSERT INTO sessions (namespace, session, turn, faults_this_turn, turn_started_at, last_call_at, created_at)
VALUES (?, ?, 0, 0, ?, ?, ?)
ON CONFLICT (namespace, session) DO NOTHING
"""

_GET = """
SELECT namespace, session, turn, faults_this_turn, turn_started_at, last_call_at
FROM sessions WHERE namespace = ? AND session = ?
"""

_NEW_TURN = """
UPDATE sessions SET turn = turn + 1, faults_this_turn = 0, turn_started_at = ?, last_call_at = ?
WHERE namespace = ? AND session = ?
"""

_MARK_CALL = "UPDATE sessions SET last_call_at = ? WHERE namespace = ? AND session = ?"

_CHARGE_FAULT = """
UPDATE sessions SET faults_this_turn = faults_this_turn + 1 WHERE namespace = ? AND session = ?
"""


def _state(row: Row) -> SessionState:
    return SessionState(
        namespace=row["namespace"],
        session=row["session"],
        turn=row["turn"],
        faults_this_turn=row["faults_this_turn"],
        turn_started_at=row["turn_started_at"],
        last_call_at=row["last_call_at"],
    )


async def get_session(conn: aiosqlite.Connection, namespace: str, session: str) -> SessionState:
    row = await fetchone(conn, _GET, (namespace, session))
    assert row is not None, "call touch_session first"
    return _state(row)


async def read_session(db: Database, namespace: str, session: str) -> SessionState | None:
    """The session as last committed, without creating it (for read-only views)."""
    row = await db.fetchone(_GET, (namespace, session))
    return _state(row) if row else None


async def touch_session(
    conn: aiosqlite.Connection, namespace: str, session: str, now: float, idle_seconds: float
) -> SessionState:
    """Create the session on first use, start a new turn after an idle gap, and record this call."""
    await conn.execute(_ENSURE, (namespace, session, now, now, now))
    state = await get_session(conn, namespace, session)
    if now - state.last_call_at > idle_seconds:
        await conn.execute(_NEW_TURN, (now, now, namespace, session))
    else:
        await conn.execute(_MARK_CALL, (now, namespace, session))
    return await get_session(conn, namespace, session)


async def begin_turn(conn: aiosqlite.Connection, namespace: str, session: str, now: float) -> SessionState:
    await conn.execute(_ENSURE, (namespace, session, now, now, now))
    await conn.execute(_NEW_TURN, (now, now, namespace, session))
    return await get_session(conn, namespace, session)


async def charge_fault(conn: aiosqlite.Connection, namespace: str, session: str) -> None:
    await conn.execute(_CHARGE_FAULT, (namespace, session))
