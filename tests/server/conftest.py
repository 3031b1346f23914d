from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings, ToolProfile


@pytest.fixture(params=["auto", "legacy"], ids=["modern", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    """Both protocol eras: the stateless 2026 protocol and the initialize handshake desktop hosts use."""
    return request.param


@pytest.fixture
def connect(migrated, mode) -> Callable[..., Any]:
    @asynccontextmanager
    async def open_client(tools: ToolProfile = ToolProfile.ALL, **settings: Any) -> AsyncIterator[Client]:
        server = build_server(ServerSettings(db=migrated(), tools=tools, **settings))
        async with Client(server, mode=mode) as client:
            yield client

    return open_client


async def call(client: Client, tool: str, /, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content or {})


async def call_error(client: Client, tool: str, /, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def read(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    return result.contents[0].text
