"""The SDK's private attributes memvm reaches (memvm.server.sdk_internals) are still where it looks.

When an mcp release moves one, these fail with a sentence naming the attribute.
"""

import warnings
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.server.connection import Connection
from mcp.server.mcpserver import Context, MCPServer
from memvm.server.app import build_server
from memvm.server.sdk_internals import (
    SdkMoved,
    connection_of,
    end_session,
    open_session_ids,
)
from memvm.server.settings import ServerSettings

from tests.e2e.test_http import INITIALIZE

pytestmark = pytest.mark.anyio

# The address the SDK's DNS-rebinding protection accepts for a server on loopback.
LOCAL = "http://127.0.0.1:8000"


async def test_the_protocol_methods_registered_on_the_low_level_server_are_served_and_advertised(db_path):
    server = build_server(ServerSettings(db=str(db_path)))
    async with Client(server, mode="legacy") as client:
        capabilities = client.server_capabilities
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both methods are gone from the new protocol era
            await client.subscribe_resource("memvm://current/working-set")
            await client.set_logging_level("info")
    assert capabilities is not None and capabilities.resources is not None
    assert capabilities.resources.subscribe is True and capabilities.logging is not None


def connection_probe(seen: list[Connection]) -> MCPServer[Any]:
    """A bare server whose one tool reports the connection its request arrived on."""
    probe: MCPServer[Any] = MCPServer("probe")

    @probe.tool()
    async def whose_connection(ctx: Context) -> str:
        try:
            seen.append(connection_of(ctx.session))
        except SdkMoved as exc:
            return str(exc)
        return "reached"

    return probe


async def test_the_connection_of_a_request_is_reached_through_its_session(mode):
    seen: list[Connection] = []
    async with Client(connection_probe(seen), mode=mode) as client:
        reply = (await client.call_tool("whose_connection", {})).content[0].text
    assert reply == "reached", reply
    assert isinstance(seen[0], Connection)


async def test_requests_of_one_handshake_connection_share_one_connection_object():
    # Subscriptions are keyed by this object, so a client that subscribes in one request hears
    # about changes that later requests make.
    seen: list[Connection] = []
    async with Client(connection_probe(seen), mode="legacy") as client:
        await client.call_tool("whose_connection", {})
        await client.call_tool("whose_connection", {})
    assert len(seen) == 2 and seen[0] is seen[1]


async def test_the_http_sessions_are_seen_and_ended_through_the_session_manager(db_path):
    server = build_server(ServerSettings(db=str(db_path)))
    app = server.streamable_http_app()
    manager = server.session_manager
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    transport = httpx2.ASGITransport(app)
    with anyio.fail_after(60):
        async with manager.run(), httpx2.AsyncClient(transport=transport, base_url=LOCAL) as http:
            opened = await http.post("/mcp", json=INITIALIZE, headers=headers)
            session_id = opened.headers["mcp-session-id"]
            seen = open_session_ids(manager)
            await end_session(manager, session_id)
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            after = await http.post("/mcp", json=ping, headers={**headers, "Mcp-Session-Id": session_id})
            left = open_session_ids(manager)
    assert seen == {session_id}
    assert after.status_code == 404 and left == set()
