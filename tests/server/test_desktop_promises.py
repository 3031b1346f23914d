"""What the default tools (`--tools model`) promise a model whose host only passes tool replies to
it (Claude Desktop, Cursor, VS Code: no turns, no working set in the prompt), and that each
promise holds through the client. The host-facing profile is told about turns."""

import json

import pytest
from mcp import Client
from memvm.server.settings import ToolProfile

from tests.server.conftest import call, call_error

pytestmark = pytest.mark.anyio

IDLE_RESET = "resets after 120 s without memory calls"


async def everything_said(client: Client) -> str:
    """The instructions and the whole tool list, as a host could pass them on to the model."""
    tools = (await client.list_tools()).tools
    listing = [tool.model_dump(mode="json", exclude_none=True) for tool in tools]
    return json.dumps([client.instructions or "", listing], ensure_ascii=False)


async def test_a_desktop_model_is_told_only_the_idle_reset_of_its_fault_limit(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        said = await everything_said(client)
        for i in range(4):
            await call(client, "remember", content=f"Pump {i} starts at dawn.", key=f"pump-{i}")
        for i in range(3):
            await call(client, "page_fault", page_id=f"pump-{i}")
        refused = await call_error(client, "page_fault", page_id="pump-3")
    assert "next user message" not in said and "next turn" not in said
    assert f"the limit {IDLE_RESET}" in said
    assert refused == f"The limit of 3 page faults is used up; answer with what you have. It {IDLE_RESET}."


async def test_a_host_that_sends_turns_is_told_the_limit_resets_at_the_next_user_message(connect):
    async with connect(tools=ToolProfile.ALL) as client:
        description = {tool.name: tool for tool in (await client.list_tools()).tools}[
            "page_fault"
        ].description
        for i in range(4):
            await call(client, "remember", content=f"Pump {i} starts at dawn.", key=f"pump-{i}")
        for i in range(3):
            await call(client, "page_fault", page_id=f"pump-{i}")
        refused = await call_error(client, "page_fault", page_id="pump-3")
        await call(client, "begin_turn")
        again = await call(client, "page_fault", page_id="pump-3")
    said = "the limit resets at the next turn (the next user message) or after 120 s without memory calls"
    assert said in description
    assert refused.endswith(
        "It resets at the next turn (the next user message) or after 120 s without memory calls."
    )
    assert again["faults_left"] == 2
