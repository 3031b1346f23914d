"""Handshake-era HTTP sessions, counted per namespace, so no tenant can fill the table for the others.

A client of the older protocol opens a session with `initialize` and names it in `mcp-session-id`
afterwards; the SDK keeps every session until it is deleted or idles out, up to one limit for the
whole process. One token could open sessions until that limit, and every other tenant's new
session would be refused. Here each namespace (a token's, or the process's without tokens) keeps
at most SESSIONS_PER_NAMESPACE: opening one more ends that namespace's least recently used idle
session first. Only when all of its sessions are busy is the new one refused, and only for it.
"""

import json
import time
from collections import defaultdict
from dataclasses import dataclass

import anyio
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import INTERNAL_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from memvm.server.sdk_internals import end_session, open_session_ids
from memvm.server.tokens import token_namespace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Agents of one tenant, each holding a session, with room to spare.
SESSIONS_PER_NAMESPACE = 32
# A session nobody has used for this long is ended; its client opens a new one on the next 404.
SESSION_IDLE_S = 10 * 60.0
# Without tokens every client shares the process's namespace.
_PROCESS = ""

REFUSED = (
    "This token already has the most sessions it may keep open, and all of them are busy; "
    "end one (HTTP DELETE with its mcp-session-id) or retry when one finishes."
)


@dataclass
class _Session:
    namespace: str
    last_used: float
    in_flight: int = 0


class SessionQuota:
    """ASGI middleware before the SDK's session manager; it needs the verified token, so it sits
    inside the authentication middleware."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        manager: StreamableHTTPSessionManager,
        path: str,
        tokens_required: bool,
        limit: int = SESSIONS_PER_NAMESPACE,
    ) -> None:
        self.app = app
        self._manager = manager
        self._path = path
        self._tokens_required = tokens_required
        self._limit = limit
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
        if session_id is None:
            await self._open(namespace or _PROCESS, scope, receive, send)
            return
        session = self._sessions.get(session_id)
        if session is None or session.namespace != (namespace or _PROCESS):
            await self.app(scope, receive, send)  # the SDK answers an unknown or foreign id
            return
        session.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            session.in_flight -= 1
            session.last_used = time.monotonic()

    async def _open(self, namespace: str, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._lock:
            room = await self._make_room(namespace)
            if room:
                self._opening[namespace] += 1
        if not room:
            await _refuse(send)
            return
        counted_as_opening = True

        async def noting_the_session(message: Message) -> None:
            nonlocal counted_as_opening
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = _header(message, MCP_SESSION_ID_HEADER)
                if opened is not None:
                    # From its answer on it is an open session, counted as one: no longer as one
                    # opening, though the answer's body may still be on its way.
                    self._sessions[opened] = _Session(namespace, time.monotonic())
                    self._opening[namespace] -= 1
                    counted_as_opening = False
            await send(message)

        try:
            await self.app(scope, receive, noting_the_session)
        finally:
            if counted_as_opening:
                self._opening[namespace] -= 1

    async def _make_room(self, namespace: str) -> bool:
        """Whether `namespace` may open another session, ending its least recently used idle one if needed."""
        live = open_session_ids(self._manager)
        for session_id in [known for known in self._sessions if known not in live]:
            del self._sessions[session_id]  # ended by its client, its idle timeout or a crash
        mine = {sid: s for sid, s in self._sessions.items() if s.namespace == namespace}
        if len(mine) + self._opening[namespace] < self._limit:
            return True
        idle = [sid for sid, session in mine.items() if session.in_flight == 0]
        if not idle:
            return False
        oldest = min(idle, key=lambda sid: mine[sid].last_used)
        del self._sessions[oldest]
        await end_session(self._manager, oldest)
        return True


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
