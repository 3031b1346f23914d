"""Procedural memory through the official client, in both protocol eras."""

import pytest
from memvm.server.settings import ToolProfile

from tests.server.conftest import call, call_error

pytestmark = pytest.mark.anyio

FIXED = {"tool": "book", "args": {"date": "2026-05-12"}, "outcome": "success", "result": {"booking": "B-7"}}
FAILED_AGAIN = {
    "tool": "book",
    "args": {"date": "1/1"},
    "outcome": "failure",
    "error_message": "invalid date '1/1'",
}
FAILED = {
    "tool": "book",
    "args": {"date": "12/05/2026"},
    "outcome": "failure",
    "error_message": "invalid date '12/05/2026'",
}


async def test_both_tools_are_in_the_model_profile(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["get_procedural_hints"].annotations.read_only_hint is True
    assert tools["record_tool_outcome"].annotations.read_only_hint is False


async def test_a_fix_learned_in_one_session_is_offered_in_another(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        failed = await call(client, "record_tool_outcome", **FAILED, session="monday")
        fixed = await call(client, "record_tool_outcome", **FIXED, session="monday")
        hints = await call(
            client, "get_procedural_hints", error_type="invalid date '3/3/2027'", max_tokens=300
        )
        later = await call(client, "record_tool_outcome", **FAILED_AGAIN, session="tuesday")
    assert fixed["fix"] == {
        "fixed_call_id": failed["call_id"],
        "delta": {
            "added": {},
            "removed": {},
            "changed": {"date": {"from": "12/05/2026", "to": "2026-05-12"}},
        },
    }
    assert fixed["ref"] == "$v1"
    assert hints["guidance"][0]["session"] == "monday"
    assert 'changed date from "12/05/2026" to "2026-05-12"' in hints["text"]
    assert hints["tokens"] <= 300
    assert later["fix"] is None


async def test_the_hint_block_respects_a_small_cap(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        for index in range(8):
            await call(
                client,
                "record_tool_outcome",
                tool=f"tool{index}",
                args={"i": index},
                outcome="failure",
                error_message=f"tool{index} broke while reading its long configuration section {index}",
            )
        hints = await call(client, "get_procedural_hints", max_tokens=60)
    assert hints["tokens"] <= 60
    assert hints["text"].startswith("<procedural_memory>") and hints["text"].endswith("</procedural_memory>")
    assert len(hints["tools"]) == 5


async def test_a_large_result_is_paged_and_readable_with_page_fault(connect):
    report = "\n".join(
        f"row {i}: disk {i} healthy, temperature {30 + i % 7} C, {i * 3} hours" for i in range(80)
    )
    async with connect(tools=ToolProfile.MODEL) as client:
        recorded = await call(
            client, "record_tool_outcome", tool="disk_report", args={}, outcome="success", result=report
        )
        fault = await call(client, "page_fault", page_id=recorded["page_id"], target_level=0)
    assert fault["content"] == report and fault["type"] == "tool_result"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"tool": "t", "args": {}, "outcome": "exploded"}, "outcome"),
        ({"tool": "t", "args": {}, "outcome": "success", "duration_ms": -1}, "duration_ms"),
        ({"tool": "t", "args": {}, "outcome": "failure", "error_type": "x" * 201}, "error_type"),
        ({"tool": "t", "args": {}, "outcome": "failure", "goal": "a\x00b"}, "goal"),
    ],
)
async def test_bad_outcome_arguments_get_one_clear_sentence(connect, arguments, field):
    async with connect(tools=ToolProfile.MODEL) as client:
        message = await call_error(client, "record_tool_outcome", **arguments)
    assert message.startswith("Invalid arguments for record_tool_outcome") and field in message


async def test_a_hint_cap_below_the_minimum_is_refused(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        message = await call_error(client, "get_procedural_hints", max_tokens=5)
    assert "max_tokens" in message


async def test_call_ids_count_within_each_namespace(connect):
    # One count for the whole file told a tenant how many calls the others made.
    async with connect(namespace="tenant-a") as a, connect(namespace="tenant-b") as b:
        first_b = await call(b, "record_tool_outcome", **FAILED)
        a_ids = [(await call(a, "record_tool_outcome", **FAILED))["call_id"] for _ in range(3)]
        second_b = await call(b, "record_tool_outcome", **FIXED)
    assert a_ids == [1, 2, 3]
    assert (first_b["call_id"], second_b["call_id"]) == (1, 2)
    assert second_b["fix"]["fixed_call_id"] == 1
