"""Handshake-era HTTP sessions, counted per namespace, so no tenant can fill the table for the others.

A client of the older protocol opens a session with `initialize` and names it in `mcp-session-id`
afterwards; the SDK keeps every session until it is deleted or idles out, up to one limit for the
whole process. One token could open sessions until that limit, and every other tenant's new
session would be refused. Here each namespace (a token's, or the process's without tokens) keeps
at most SESSIONS_PER_NAMESPACE: opening one more ends that namespace's least recently used idle
session, once the new one is open (a request that opens nothing, refused by the SDK, ends nothing).
Only when all of its sessions are busy is the new one refused, and only for it.

The SDK's session manager neither lists its sessions nor ends one, so this middleware keeps its
own table from what passes through it: a session is open from the answer that names it until its
client deletes it, it is answered 404 (ended by its idle timeout, or crashed), or it has idled as
long as the SDK lets it. It ends one the way a client would: an HTTP DELETE naming it, with the
credentials that opened it.
"""

import json
import time
from collections import defaultdict
from dataclasses import dataclass

import anyio
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import INTERNAL_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from memvm.server.tokens import token_namespace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Agents of one tenant, each holding a session, with room to spare.
SESSIONS_PER_NAMESPACE = 32
# A session nobody has used for this long is ended; its client opens a new one on the next 404.
SESSION_IDLE_S = 10 * 60.0
# How long ending a session to make room may take.
_END_WAIT_S = 10.0
# Without tokens every client shares the process's namespace.
_PROCESS = ""

REFUSED = (
    "This token's namespace already has the most sessions it may keep open, and all of them are "
    "busy or still being opened; end one (HTTP DELETE with its mcp-session-id) or retry when one "
    "finishes."
)


@dataclass
class _Session:
    namespace: str
    last_used: float
    # The opening request, without its body: its headers pass the transport's checks and its
    # user is the credential the SDK ties the session to.
    opened_by: Scope
    in_flight: int = 0
    # Set aside to make room for a session being opened; ended once that one is open.
    making_room: bool = False


class SessionQuota:
    """ASGI middleware before the SDK's session manager; it needs the verified token, so it sits
    inside the authentication middleware."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        tokens_required: bool,
        limit: int = SESSIONS_PER_NAMESPACE,
        idle_s: float = SESSION_IDLE_S,
    ) -> None:
        self.app = app
        self._path = path
        self._tokens_required = tokens_required
        self._limit = limit
        self._idle_s = idle_s  # as the SDK's session_idle_timeout: past it, the SDK has ended it
        self._sessions: dict[str, _Session] = {}
        self._opening: defaultdict[str, int] = defaultdict(int)
        self._lock = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self._path or not _handshake_era(scope):
            await self.app(scope, receive, send)
            return
        namespace = token_namespace()
        if namespace is None and self._tokens_required:
            await self.app(scope, receive, send)  # refused by the authentication that follows
            return
        session_id = _header(scope, MCP_SESSION_ID_HEADER)
        if session_id is None and scope["method"] == "POST":  # only a POST (an initialize) opens one
            await self._open(namespace or _PROCESS, scope, receive, send)
            return
        if session_id is None:
            await self.app(scope, receive, send)  # the SDK refuses it
            return
        session = self._sessions.get(session_id)
        if session is None or session.namespace != (namespace or _PROCESS):
            await self.app(scope, receive, send)  # the SDK answers an unknown or foreign id
            return
        session.in_flight += 1
        status: int | None = None

        async def noting_the_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noting_the_status)
        finally:
            session.in_flight -= 1
            session.last_used = time.monotonic()
            ended = status == 404 or (scope["method"] == "DELETE" and status is not None and status < 400)
            if ended and self._sessions.get(session_id) is session:
                del self._sessions[session_id]

    async def _open(self, namespace: str, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._lock:
            room, making_room = self._room_for(namespace)
            if room:
                self._opening[namespace] += 1
        if not room:
            await _refuse(send)
            return
        counted_as_opening = True
        opened = False
        as_asked = dict(scope)  # before routing adds to it, to be routed again for a DELETE

        async def noting_the_session(message: Message) -> None:
            nonlocal counted_as_opening, opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = _header(message, MCP_SESSION_ID_HEADER)
                if session_id is not None:
                    # From its answer on it is an open session, counted as one: no longer as one
                    # opening, though the answer's body may still be on its way.
                    self._sessions[session_id] = _Session(namespace, time.monotonic(), as_asked)
                    self._opening[namespace] -= 1
                    counted_as_opening = False
                    opened = True
            await send(message)

        try:
            await self.app(scope, receive, noting_the_session)
        finally:
            if counted_as_opening:
                self._opening[namespace] -= 1
            if making_room is not None:
                # Ended only once a session was really opened: a request the SDK refuses (no
                # initialize, a foreign Origin) takes no one's place.
                # Shielded, so that a client leaving mid-answer still leaves the table right;
                # bounded, so that no DELETE the SDK never answers holds the request open.
                with anyio.CancelScope(shield=True) as ending:
                    ending.deadline = anyio.current_time() + _END_WAIT_S
                    await self._make_room(namespace, making_room, opened)

    def _room_for(self, namespace: str) -> tuple[bool, str | None]:
        """Whether `namespace` may open another session, and which of its idle sessions then makes
        room (set aside now, ended once the new one is open), if one must."""
        now = time.monotonic()
        for session_id, session in list(self._sessions.items()):
            if session.in_flight == 0 and not session.making_room and now - session.last_used >= self._idle_s:
                del self._sessions[session_id]  # the SDK's idle timeout has ended it
        counted = sum(1 for s in self._sessions.values() if s.namespace == namespace and not s.making_room)
        if counted + self._opening[namespace] < self._limit:
            return True, None
        oldest = self._least_recently_used_idle(namespace)
        if oldest is None:
            return False, None
        self._sessions[oldest].making_room = True
        return True, oldest

    def _least_recently_used_idle(self, namespace: str) -> str | None:
        """The namespace's session idle the longest, of those not already set aside."""
        idle = [
            (s.last_used, sid)
            for sid, s in self._sessions.items()
            if s.namespace == namespace and s.in_flight == 0 and not s.making_room
        ]
        return min(idle)[1] if idle else None

    async def _make_room(self, namespace: str, set_aside: str, opened: bool) -> None:
        session = self._sessions.get(set_aside)
        if session is None:
            return  # its client ended it meanwhile
        if not opened:
            session.making_room = False
            return
        if session.in_flight > 0:
            # Its client came back meanwhile: another idle one goes, or, with none, the namespace
            # holds one more than its share until its next opening.
            session.making_room = False
            if sum(1 for s in self._sessions.values() if s.namespace == namespace) <= self._limit:
                return
            other = self._least_recently_used_idle(namespace)
            if other is None:
                return
            set_aside, session = other, self._sessions[other]
        del self._sessions[set_aside]
        await self._end(set_aside, session)

    async def _end(self, session_id: str, session: _Session) -> None:
        """End a session as its client would: DELETE, naming it, as the client that opened it.

        Answered 404 when it had already ended; either way it is gone from the SDK's table.
        """
        headers = [(k, v) for k, v in session.opened_by["headers"] if k.lower() not in _PER_REQUEST]
        headers.append((MCP_SESSION_ID_HEADER.lower().encode("latin-1"), session_id.encode("latin-1")))
        deleting = {**session.opened_by, "method": "DELETE", "headers": headers}
        asked = False

        async def empty_body() -> Message:
            nonlocal asked
            if asked:
                return {"type": "http.disconnect"}
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def unheard(message: Message) -> None:
            pass

        await self.app(deleting, empty_body, unheard)


# Headers of the opening request that a DELETE must not repeat.
_PER_REQUEST = {
    b"content-length",
    b"content-type",
    MCP_SESSION_ID_HEADER.lower().encode("latin-1"),
    MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1"),
}


def _handshake_era(scope: Scope) -> bool:
    # As the SDK routes: no version header, or a handshake version, is the older protocol.
    version = _header(scope, MCP_PROTOCOL_VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def _header(holder: Scope | Message, name: str) -> str | None:
    wanted = name.lower().encode("latin-1")
    return next((v.decode("latin-1") for k, v in holder.get("headers", []) if k.lower() == wanted), None)


async def _refuse(send: Send) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": INTERNAL_ERROR, "message": REFUSED}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
