"""Sessions and their turn counters.

A turn advances when the host calls begin_turn, when a user message is ingested, or, for hosts
that never mark turns, on the first call after `turn_idle_seconds` of silence in the session. The
per-turn fault allowance resets with each new turn.

Any tool creates a session by naming it, but only the host drives one: begin_turn and ingest
start its turns. A session whose current turn the host did not start is ad hoc: a name a
model-facing tool made up, or an old conversation a call came back to after an idle gap (which
starts a new turn by itself). Its faults and guard calls also count against the caller's own
session (see `touch_with_allowance`), so naming another session, made up or long over, buys nothing.
"""

from memvm.engine.errors import InvalidArgument
from memvm.engine.models.sessions import SessionState
from memvm.engine.storage.api import Reads, Row, Writes
from memvm.engine.storage.statements import statement

_STATE_COLUMNS = "namespace, session, turn, faults_this_turn, turn_started_at, last_call_at, ad_hoc"

# One statement each (a round trip to the database thread costs more than the SQL): create the
# session on first use, else record the call, starting a new turn after an idle gap. SET
# expressions all read the row as it was, so the gap is measured from the previous call.
_TOUCH = statement(
    "sessions.touch",
    f"""
INSERT INTO sessions (
    namespace, session, turn, faults_this_turn, turn_started_at, last_call_at, created_at, ad_hoc)
VALUES (:namespace, :session, 0, 0, :now, :now, :now, CASE WHEN :by_host THEN 0 ELSE 1 END)
ON CONFLICT (namespace, session) DO UPDATE SET
    ad_hoc = CASE WHEN :by_host THEN 0 WHEN :now - sessions.last_call_at > :idle THEN 1 ELSE sessions.ad_hoc END,
    turn = CASE WHEN :now - sessions.last_call_at > :idle THEN sessions.turn + 1 ELSE sessions.turn END,
    faults_this_turn = CASE WHEN :now - sessions.last_call_at > :idle THEN 0 ELSE sessions.faults_this_turn END,
    turn_started_at = CASE WHEN :now - sessions.last_call_at > :idle THEN :now ELSE sessions.turn_started_at END,
    last_call_at = :now
RETURNING {_STATE_COLUMNS}, created_at
""",
)

_BEGIN_TURN = statement(
    "sessions.begin turn",
    f"""
INSERT INTO sessions (
    namespace, session, turn, faults_this_turn, turn_started_at, last_call_at, created_at, ad_hoc)
VALUES (:namespace, :session, 1, 0, :now, :now, :now, 0)
ON CONFLICT (namespace, session) DO UPDATE SET
    ad_hoc = 0, turn = sessions.turn + 1, faults_this_turn = 0, turn_started_at = :now, last_call_at = :now
RETURNING {_STATE_COLUMNS}, created_at
""",
)

_GET = statement(
    "sessions.get",
    f"SELECT {_STATE_COLUMNS} FROM sessions WHERE namespace = :namespace AND session = :session",
)

# Sessions one namespace keeps at most: a conversation a day for centuries, and a bound on the
# rows a client can make by naming new sessions.
MAX_SESSIONS_PER_NAMESPACE = 100_000

_SESSIONS_IN_NAMESPACE = statement(
    "sessions.in namespace", "SELECT count(*) FROM sessions WHERE namespace = :namespace"
)

_CHARGE_FAULT = statement(
    "sessions.charge fault",
    "UPDATE sessions SET faults_this_turn = faults_this_turn + 1 WHERE namespace = :namespace AND session = :session",
)


def _state(row: Row) -> SessionState:
    return SessionState(
        namespace=row["namespace"],
        session=row["session"],
        turn=row["turn"],
        faults_this_turn=row["faults_this_turn"],
        turn_started_at=row["turn_started_at"],
        last_call_at=row["last_call_at"],
        ad_hoc=bool(row["ad_hoc"]),
    )


async def get_session(conn: Reads, namespace: str, session: str) -> SessionState:
    row = await conn.one(_GET, namespace=namespace, session=session)
    assert row is not None, "call touch_session first"
    return _state(row)


async def read_session(conn: Reads, namespace: str, session: str) -> SessionState | None:
    """The session as last committed, without creating it (for read-only views)."""
    row = await conn.one(_GET, namespace=namespace, session=session)
    return _state(row) if row else None


async def touch_session(
    conn: Writes, namespace: str, session: str, now: float, idle_seconds: float, *, by_host: bool = False
) -> SessionState:
    """Create the session on first use, start a new turn after an idle gap, and record this call.

    `by_host` says the host is the caller (ingest), which makes the session its own, not ad hoc;
    a turn started here by an idle gap makes it ad hoc.
    """
    row = await conn.one(
        _TOUCH, namespace=namespace, session=session, now=now, idle=idle_seconds, by_host=by_host
    )
    assert row is not None  # RETURNING always yields the row
    await _within_bound(conn, namespace, row, now)
    return _state(row)


async def begin_turn(conn: Writes, namespace: str, session: str, now: float) -> SessionState:
    row = await conn.one(_BEGIN_TURN, namespace=namespace, session=session, now=now)
    assert row is not None  # RETURNING always yields the row
    await _within_bound(conn, namespace, row, now)
    return _state(row)


async def _within_bound(conn: Writes, namespace: str, row: Row, now: float) -> None:
    """Refuse a session made just now past MAX_SESSIONS_PER_NAMESPACE (the write rolls it back)."""
    if row["created_at"] != now:
        return  # an existing session: counted when it was made
    counted = await conn.one(_SESSIONS_IN_NAMESPACE, namespace=namespace)
    if counted is not None and int(counted[0]) > MAX_SESSIONS_PER_NAMESPACE:
        raise InvalidArgument(
            f"This memory keeps at most {MAX_SESSIONS_PER_NAMESPACE} sessions and has them all; use a "
            "session that exists (leave out session to use your own)."
        )


async def charge_fault(conn: Writes, namespace: str, session: str) -> None:
    await conn.execute(_CHARGE_FAULT, namespace=namespace, session=session)


async def touch_with_allowance(
    conn: Writes, namespace: str, session: str, own_session: str | None, now: float, idle_seconds: float
) -> tuple[SessionState, SessionState]:
    """Touch `session`, and the caller's `own_session` too when `session` is ad hoc.

    Returns the named session and the one whose fault allowance and guard budgets the call
    counts against: the caller's own for an ad-hoc session, else the named one itself.
    """
    state = await touch_session(conn, namespace, session, now, idle_seconds)
    if own_session is None or not state.ad_hoc or state.session == own_session:
        return state, state
    return state, await touch_session(conn, namespace, own_session, now, idle_seconds)
