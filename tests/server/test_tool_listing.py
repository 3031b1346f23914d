"""What the model reads in tools/list: every tool and argument explained, at a bounded token cost."""

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from memvm.engine import EngineConfig
from memvm.engine.paging.tokens import TokenCounter
from memvm.server.settings import ToolProfile

from tests.server.conftest import call

pytestmark = pytest.mark.anyio

# The model-facing tool list, as the model receives it, measured 3,093 tokens when this bound was
# set (down from 3,658), and 3,240 once remember took ttl_seconds (about 55 tokens of schema) and
# said that rewrites keep history, and 3,407 once forget joined the model's tools (so that "forget
# that" works on hosts that only pass tool replies) and an empty search_pages query lists what is
# remembered, then 3,330 once the default tools stopped speaking of a working set their hosts never
# show, and about 3,380 once remember took scope (a fact about the user is recalled in every
# project): room for a few more words, not for a new repetition.
MODEL_TOOL_LIST_TOKENS = 3_450


async def listed(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


def arguments(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every argument in a schema, nested ones (like a message's role) included."""
    for name, spec in schema.get("properties", {}).items():
        yield f"{path}.{name}", spec
        yield from arguments(spec, f"{path}.{name}")
        yield from arguments(spec.get("items", {}), f"{path}.{name}[]")


async def test_every_argument_of_every_tool_carries_a_description(connect):
    async with connect(tools=ToolProfile.ALL) as client:
        tools = await listed(client)
    undescribed = [
        path
        for tool in tools.values()
        for path, spec in arguments(tool.input_schema, tool.name)
        if not spec.get("description")
    ]
    assert undescribed == []


async def test_descriptions_read_without_source_indentation_or_schema_repetition(connect):
    async with connect(tools=ToolProfile.ALL) as client:
        tools = await listed(client)
    for tool in tools.values():
        assert not any(line.startswith(" ") for line in tool.description.splitlines()), tool.name
        for schema in (json.dumps(tool.input_schema), json.dumps(tool.output_schema)):
            assert '"title"' not in schema and "$ref" not in schema, tool.name


async def test_page_fault_states_the_configured_fault_limit_and_what_happens_past_it(connect):
    async with connect(engine=EngineConfig(max_faults_per_turn=5)) as client:
        configured = (await listed(client))["page_fault"].description
    async with connect() as client:
        default = (await listed(client))["page_fault"].description
    assert "limited to 5 per turn" in configured
    assert "limited to 3 per turn" in default
    assert "the call fails, so answer with what you have" in default
    assert "the limit resets at the next turn" in default


async def test_check_tool_call_says_what_to_do_on_each_verdict(connect):
    async with connect() as client:
        description = (await listed(client))["check_tool_call"].description
    for verdict in ('On "allow"', 'On "warn", fix what the reasons name', 'On "block", do not make the call'):
        assert verdict in description


async def test_search_pages_says_what_score_level_and_mapped_mean(connect):
    async with connect() as client:
        description = (await listed(client))["search_pages"].description
    assert "`score` ranks the hits of this one search (higher is better" in description
    assert "`mapped` says whether the page is loaded in your context now" in description
    assert "`level` at which detail" in description


async def test_remember_says_what_each_type_is_for(connect):
    async with connect() as client:
        spec = (await listed(client))["remember"].input_schema["properties"]["type"]
    assert all(f"{kind}: " in spec["description"] for kind in spec["enum"])


async def test_every_session_argument_says_what_a_session_is_and_what_a_new_name_does(connect):
    async with connect(tools=ToolProfile.ALL) as client:
        tools = await listed(client)
    described = {
        name: tool.input_schema["properties"]["session"]["description"]
        for name, tool in tools.items()
        if "session" in tool.input_schema["properties"]
    }
    assert len(described) >= 10
    for text in described.values():
        assert "One conversation inside the memory" in text
        assert "Leave it out to use this connection's own session" in text
        assert "Pages of every session stay searchable" in text
        assert "a new name starts a new, empty session that your host does not show" in text


async def test_an_optional_argument_sent_as_null_is_taken_as_left_out(connect):
    async with connect() as client:
        found = await call(client, "search_pages", query="anything", session=None, type=None)
    assert found["results"] == []


def model_view(tools: list[Any]) -> str:
    """The tool list as the model receives it: each tool's name, description and input schema."""
    return json.dumps(
        [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools],
        ensure_ascii=False,
    )


async def test_the_model_tool_list_stays_within_its_token_bound(connect, mode, report_figure):
    async with connect(tools=ToolProfile.MODEL) as client:
        tools = (await client.list_tools()).tools
    tokens = TokenCounter("o200k_base").count(model_view(tools))
    if mode == "auto":  # one figure: both eras list the same tools
        report_figure(f"tool_list: profile=model tools={len(tools)} tokens={tokens}")
    assert tokens <= MODEL_TOOL_LIST_TOKENS
