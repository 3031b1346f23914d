"""The session table kept per namespace, in process: the SDK's own session manager behind it,
reached over an ASGI transport (the real server under a crowd is tests/e2e/test_http_limits.py)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from memvm.server.app import build_server
from memvm.server.session_quota import SessionQuota
from memvm.server.settings import ServerSettings
from starlette.middleware import Middleware

from tests.e2e.test_http import INITIALIZE

pytestmark = pytest.mark.anyio

# The address the SDK's DNS-rebinding protection accepts for a server on loopback.
LOCAL = "http://127.0.0.1:8000"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


@asynccontextmanager
async def http_client(db_path, *, limit: int, idle_s: float = 600.0) -> AsyncIterator[httpx2.AsyncClient]:
    server = build_server(ServerSettings(db=str(db_path)))
    app = server.streamable_http_app(streamable_http_path="/mcp")
    app.user_middleware.append(
        Middleware(SessionQuota, path="/mcp", tokens_required=False, limit=limit, idle_s=idle_s)
    )
    with anyio.fail_after(60):
        async with (
            server.session_manager.run(),
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url=LOCAL) as http,
        ):
            yield http


async def open_session(http: httpx2.AsyncClient) -> str:
    opened = await http.post("/mcp", json=INITIALIZE, headers=HEADERS)
    assert opened.status_code == 200, opened.text
    return opened.headers["mcp-session-id"]


async def answering(http: httpx2.AsyncClient, session_ids: list[str]) -> list[str]:
    """The sessions that still answer a ping."""
    kept = []
    for session_id in session_ids:
        reply = await http.post("/mcp", json=PING, headers={**HEADERS, "Mcp-Session-Id": session_id})
        if reply.status_code == 200:
            kept.append(session_id)
    return kept


async def test_past_the_limit_the_least_recently_used_session_is_ended_as_a_client_would(db_path):
    async with http_client(db_path, limit=2) as http:
        first, second = await open_session(http), await open_session(http)
        await answering(http, [first])  # the first is now the more recently used
        third = await open_session(http)
        kept = await answering(http, [first, second, third])
    assert kept == [first, third]


async def test_a_session_its_client_deleted_leaves_room_and_no_other_is_ended(db_path):
    async with http_client(db_path, limit=2) as http:
        first, second = await open_session(http), await open_session(http)
        deleted = await http.delete("/mcp", headers={**HEADERS, "Mcp-Session-Id": first})
        third = await open_session(http)
        kept = await answering(http, [first, second, third])
    assert deleted.status_code < 400
    assert kept == [second, third]


async def test_a_session_idle_past_the_sdks_timeout_is_no_longer_counted(db_path):
    # With no idle time allowed, every idle session counts as ended already: none is ended to make
    # room, so all of them still answer (the SDK here keeps them for its own, longer timeout).
    async with http_client(db_path, limit=1, idle_s=0.0) as http:
        opened = [await open_session(http) for _ in range(3)]
        kept = await answering(http, opened)
    assert kept == opened


async def test_requests_that_open_nothing_end_no_session_when_the_namespace_is_full(db_path):
    not_opening = [
        ("GET", {}, None),
        ("DELETE", {}, None),
        ("POST", {"Origin": "http://evil.example"}, INITIALIZE),  # refused by DNS-rebinding protection
        ("POST", {}, PING),  # not an initialize
    ]
    async with http_client(db_path, limit=2) as http:
        opened = [await open_session(http), await open_session(http)]
        statuses = [
            (await http.request(method, "/mcp", json=body, headers={**HEADERS, **extra})).status_code
            for method, extra, body in not_opening
        ]
        kept = await answering(http, opened)
    assert all(status >= 400 for status in statuses), statuses
    assert kept == opened
