"""A session's turn and how many faults it has left.

Plain dataclasses: a host's pre-tool hook reads a session's turn without importing pydantic; the
begin_turn tool answers with its own model (server/tools_host.py).
"""

from dataclasses import dataclass


@dataclass(kw_only=True)
class SessionState:
    namespace: str
    session: str
    turn: int
    faults_this_turn: int
    turn_started_at: float
    last_call_at: float
    # Its current turn was not started by the host (see engine.sessions).
    ad_hoc: bool = False


@dataclass(kw_only=True)
class TurnResult:
    turn: int
    faults_left: int
