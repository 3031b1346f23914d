"""`memvm serve` over HTTP: one engine for the whole run, sessions kept per namespace, sockets guarded.

MCPServer.run would run uvicorn with its defaults; memvm runs it here instead, so that the engine
is opened once before the first connection (the SSE transport otherwise opens one per
connection), each namespace keeps a bounded share of the session table (session_quota),
half-sent requests are cut off and repeated log lines collapsed (memvm.ui.http_guard, which
`memvm ui` runs uvicorn through too).
"""

from typing import TYPE_CHECKING

import anyio
from memvm.server.http import MAX_REQUEST_BYTES, transport_security
from memvm.server.session_quota import SESSION_IDLE_S, SessionQuota
from memvm.server.settings import Transport
from memvm.server.view_mount import mount_view
from memvm.ui.http_guard import guarded_server
from starlette.applications import Starlette
from starlette.middleware import Middleware

if TYPE_CHECKING:
    from memvm.server.app import MemvmServer

STREAMABLE_HTTP_PATH = "/mcp"


def http_app(
    server: "MemvmServer",
    transport: Transport,
    host: str,
    port: int,
    extra_hosts: list[str],
    *,
    tokens: dict[str, str] | None,
) -> Starlette:
    """The ASGI application for an HTTP transport; with `tokens` (the tokens file), bearer tokens
    are required, and the browser view is served at /ui/ to each token for its namespace."""
    security = transport_security(host, port, extra_hosts)
    if transport is Transport.SSE:
        app = server.sse_app(max_request_body_size=MAX_REQUEST_BYTES, transport_security=security, host=host)
        if tokens is not None:
            mount_view(app, server.runtimes, tokens, security)
        return app
    app = server.streamable_http_app(
        streamable_http_path=STREAMABLE_HTTP_PATH,
        max_request_body_size=MAX_REQUEST_BYTES,
        transport_security=security,
        host=host,
        session_idle_timeout=SESSION_IDLE_S,
    )
    # Appended, so it runs inside the authentication middleware and sees the verified token.
    app.user_middleware.append(
        Middleware(
            SessionQuota,
            path=STREAMABLE_HTTP_PATH,
            tokens_required=tokens is not None,
        )
    )
    if tokens is not None:
        mount_view(app, server.runtimes, tokens, security)
    return app


def run_http(
    server: "MemvmServer",
    transport: Transport,
    *,
    host: str,
    port: int,
    extra_hosts: list[str],
    tokens: dict[str, str] | None,
    log_level: str,
) -> None:
    """Serve until interrupted."""
    app = http_app(server, transport, host, port, extra_hosts, tokens=tokens)
    listening = guarded_server(app, host=host, port=port, log_level=log_level.lower())

    async def serve() -> None:
        # Held for the whole run: every connection and session uses this one engine.
        async with server.runtimes.using():
            await listening.serve()

    anyio.run(serve)
