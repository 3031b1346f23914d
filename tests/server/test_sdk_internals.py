"""The SDK's private attribute memvm reaches (memvm.server.sdk_internals) is still where it looks.

When an mcp release moves it, these fail with a sentence naming the attribute.
"""

from typing import Any

import pytest
from mcp import Client
from mcp.server.connection import Connection
from mcp.server.mcpserver import Context, MCPServer
from memvm.server.sdk_internals import SdkMoved, connection_of

pytestmark = pytest.mark.anyio


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
