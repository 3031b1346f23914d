"""A session's turn and how many faults it has left."""

from pydantic import BaseModel


class SessionState(BaseModel):
    namespace: str
    session: str
    turn: int
    faults_this_turn: int
    turn_started_at: float
    last_call_at: float
    # Its current turn was not started by the host (see engine.sessions).
    ad_hoc: bool = False


class TurnResult(BaseModel):
    turn: int
    faults_left: int
