"""The working-set fields of page_fault, search_pages and remember: sent where the host puts the
working set in the prompt (`--tools all`), left out where it never does (`--tools model`)."""

import json
from typing import Any

import pytest
from mcp import Client
from memvm.server.settings import ToolProfile
from memvm.server.working_set_fields import FAULT_FIELDS, HIT_FIELDS, REMEMBER_FIELDS

from tests.server.conftest import call, call_error, read

pytestmark = pytest.mark.anyio

MEMORY_TOOLS = ("page_fault", "search_pages", "remember")
# How a description would speak of the working set or its fields.
WORKING_SET_WORDS = (
    "mapped",
    "evicted",
    "faults_left",
    "working_set",
    "budget_tokens",
    "working set",
    "context",
)


async def replies(client: Client) -> dict[str, dict[str, Any]]:
    """What remember (pinned), search_pages and page_fault answer, checked against their text block."""
    answers = {}
    for tool, arguments in (
        ("remember", {"content": "The boiler is serviced every March.", "key": "boiler", "pin": True}),
        ("search_pages", {"query": "boiler"}),
        ("page_fault", {"page_id": "boiler", "target_level": 0}),
    ):
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text
        # The JSON text block, for clients that read only text, says exactly what the structure says.
        assert json.loads(result.content[0].text) == result.structured_content
        answers[tool] = result.structured_content
    return answers


async def listed(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_a_desktop_host_gets_no_working_set_field_in_any_reply(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        answers = await replies(client)
    stored, found, fault = answers["remember"], answers["search_pages"], answers["page_fault"]
    assert set(fault) == {
        "page_id",
        "level",
        "requested_level",
        "content",
        "tokens",
        "type",
        "role",
        "modality",
        "session",
        "created_at",
        "provenance",
        "reason",
        # Whether content came back, whether the read was free, and the reads left: true anywhere.
        "mapped",
        "already_mapped",
        "faults_left",
    }
    assert fault["content"] == "The boiler is serviced every March." and fault["level"] == 0
    assert (fault["mapped"], fault["already_mapped"], fault["faults_left"]) == (True, False, 2)
    assert set(found) == {"results", "total_pages", "message", "note"}
    assert [hit["page_id"] for hit in found["results"]] == ["boiler"]
    assert not HIT_FIELDS & set(found["results"][0])
    assert set(stored) == {"page_id", "created", "tokens", "version", "expires_at", "redacted"}


async def test_a_desktop_host_lists_no_working_set_field_in_an_output_schema_or_description(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        tools = await listed(client)
    fault, found, stored = (tools[name].output_schema for name in MEMORY_TOOLS)
    assert not FAULT_FIELDS & set(fault["properties"]) and not FAULT_FIELDS & set(fault["required"])
    assert not HIT_FIELDS & set(found["properties"]["results"]["items"]["properties"])
    assert not REMEMBER_FIELDS & set(stored["properties"])
    for name in MEMORY_TOOLS:
        said = " ".join([tools[name].description, json.dumps(tools[name].input_schema)])
        assert [word for word in WORKING_SET_WORDS if word in said] == [], name


async def test_the_all_profile_gets_the_working_set_fields_and_their_descriptions(connect):
    async with connect(tools=ToolProfile.ALL) as client:
        answers = await replies(client)
        tools = await listed(client)
    stored, found, fault = answers["remember"], answers["search_pages"], answers["page_fault"]
    assert set(fault) >= FAULT_FIELDS and fault["mapped"] is True and fault["already_mapped"] is False
    assert fault["working_set_tokens"] <= fault["budget_tokens"] and fault["faults_left"] == 2
    assert (
        found["results"][0]["mapped"] is True and found["results"][0]["level"] == 2
    )  # pinned as an abstract
    assert stored["mapped"] is True and stored["reason"] is None
    assert set(tools["page_fault"].output_schema["properties"]) >= FAULT_FIELDS
    for field in ("`mapped`", "`evicted`", "`faults_left`", "`working_set_tokens`", "`budget_tokens`"):
        assert field in tools["page_fault"].description
    assert "`mapped` says whether the page is loaded in your context now" in tools["search_pages"].description
    assert "`mapped` says whether it is" in tools["remember"].description


async def test_reading_the_working_set_resource_does_not_bring_the_fields_back(connect):
    # The profile alone decides: a client that reads the working set once is not a host that sends it.
    async with connect(tools=ToolProfile.MODEL) as client:
        await call(client, "remember", content="The boiler is serviced every March.", key="boiler")
        await read(client, "memvm://current/working-set")
        fault = await call(client, "page_fault", page_id="boiler")
        working_set = await read(client, "memvm://current/working-set")
    assert "boiler" in working_set
    assert not FAULT_FIELDS & set(fault)


async def test_a_desktop_hosts_fault_errors_pass_through_unchanged(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        message = await call_error(client, "page_fault", page_id="msg_999999")
    assert (
        message == "No page 'msg_999999' exists in this memory; call search_pages to find the right page id."
    )
