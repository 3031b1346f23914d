"""What the default tools (`--tools model`) promise a model whose host only passes tool replies to
it (Claude Desktop, Cursor, VS Code: no turns, no working set in the prompt), and that each
promise holds through the client. The host-facing profile is told about turns and context."""

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


async def test_a_desktop_model_is_never_promised_that_a_pinned_note_stays_in_its_context(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        said = await everything_said(client)
        remember = {tool.name: tool for tool in (await client.list_tools()).tools}["remember"]
    assert "at all times" not in said and "never evicted" not in said
    pin = remember.input_schema["properties"]["pin"]["description"]
    assert pin == "List it first whenever search_pages lists what is remembered (empty query)."


async def test_a_note_pinned_in_one_conversation_is_listed_first_in_the_next(connect):
    async with connect(tools=ToolProfile.MODEL, session="monday") as client:
        await call(client, "remember", content="The user is vegetarian.", key="diet", pin=True)
        for i in range(3):
            await call(
                client, "remember", content=f"Errand {i}: buy stamps at the corner shop.", key=f"errand-{i}"
            )
    async with connect(tools=ToolProfile.MODEL, session="tuesday") as client:
        listed = await call(client, "search_pages", query="", limit=2)
        fault = await call(client, "page_fault", page_id=listed["results"][0]["page_id"], target_level=0)
    assert [hit["page_id"] for hit in listed["results"]] == ["diet", "errand-2"]  # pinned, then newest
    assert listed["total_pages"] == 4
    assert fault["content"] == "The user is vegetarian."


async def test_the_instructions_tell_a_desktop_model_how_to_see_its_pinned_notes(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        desktop = client.instructions
    async with connect(tools=ToolProfile.ALL) as client:
        loop = client.instructions
    assert desktop is not None and loop is not None
    assert "search_pages lists what is remembered (an empty query)" in desktop
    assert "list them at the start of a conversation" in desktop
    assert "resources" not in desktop
    assert "The manifest and working-set resources show what is loaded." in loop


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
