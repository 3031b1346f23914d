"""The guard tools through the official client, in both protocol eras."""

import pytest
from memvm.engine.config import EngineConfig
from memvm.engine.guard_config import GuardConfig
from memvm.server.settings import ToolProfile

from tests.server.conftest import call, call_error

pytestmark = pytest.mark.anyio


async def test_guard_tools_are_in_the_model_profile_with_annotations(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"bind_value", "check_ungrounded", "check_tool_call"} <= set(tools)
    assert tools["check_ungrounded"].annotations.read_only_hint is True
    assert tools["check_tool_call"].annotations.read_only_hint is False
    assert tools["bind_value"].annotations.idempotent_hint is True
    assert tools["check_tool_call"].output_schema["properties"]["verdict"]


async def test_a_bound_result_is_suggested_for_its_copy_and_resolved_from_its_reference(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        bound = await call(client, "bind_value", tool="fx", args={"eur": 250}, value=271.5, name="usd")
        copied = await call(client, "check_ungrounded", tool="pay", args={"order": {"usd": 271.5}})
        referenced = await call(client, "check_ungrounded", tool="pay", args={"order": {"usd": "$usd"}})
    assert (bound["ref"], bound["aliases"], bound["value_type"]) == ("$v1", ["$usd"], "number")
    assert copied["verdict"] == "ungrounded"
    assert copied["ungrounded"] == [{"path": "order.usd", "value": 271.5, "suggestion": "$v1"}]
    assert referenced["verdict"] == "grounded"
    assert referenced["resolved_args"] == {"order": {"usd": 271.5}}


async def test_numbers_from_ingested_user_messages_are_grounded(connect):
    async with connect() as client:
        await call(client, "ingest", messages=[{"role": "user", "content": "Pay 1,800 to Jo, split 3 ways"}])
        result = await call(
            client, "check_ungrounded", tool="pay", args={"total": 1800, "ways": "3", "fee": 35}
        )
    assert [(item["path"], item["suggestion"]) for item in result["ungrounded"]] == [("fee", None)]


async def test_an_identical_call_gets_the_cached_result_instead_of_running(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        first = await call(client, "check_tool_call", tool="weather", args={"city": "Lima"})
        await call(client, "bind_value", tool="weather", args={"city": "Lima"}, value={"temp_c": 19})
        again = await call(client, "check_tool_call", tool="weather", args={"city": "Lima"})
    assert first["verdict"] == "allow" and first["budget"] == {"kind": "execution", "used": 1, "limit": 15}
    assert again["verdict"] == "block"
    assert (again["cached_result"], again["cached_ref"]) == ({"temp_c": 19}, "$v1")
    assert again["reasons"][0]["rule"] == "repeat"


async def test_a_model_with_memvm_tools_is_told_of_cached_result_bind_value_and_references(connect):
    async with connect() as client:
        await call(client, "ingest", messages=[{"role": "user", "content": "Pay the Lima hotel."}])
        await call(client, "check_tool_call", tool="weather", args={"city": "Lima"})
        await call(client, "bind_value", tool="weather", args={"city": "Lima"}, value={"temp_c": 19})
        await call(client, "bind_value", tool="fx", args={"to": "PEN"}, value=3.7521)
        again = await call(client, "check_tool_call", tool="weather", args={"city": "Lima"})
        paid = await call(client, "check_tool_call", tool="pay", args={"rate": 3.7521, "amount": 640})
    assert again["reasons"][0]["message"] == (
        "weather already ran with these arguments this turn; its result is in cached_result ($v1). "
        "Use it instead of calling again."
    )
    said = {reason["rule"]: reason["message"] for reason in paid["reasons"]}
    assert said["copied_value"] == "Pass references instead of copied values: rate=3.7521 -> $v2."
    assert "from a tool result (bind it with bind_value), never estimate them" in said["ungrounded"]


async def test_an_unknown_reference_blocks_the_call(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        result = await call(client, "check_tool_call", tool="pay", args={"usd": "$v7"})
    assert result["verdict"] == "block"
    assert result["resolved_args"] is None
    assert "$v7" in result["reasons"][0]["message"]


async def test_the_guard_preset_comes_from_the_settings(connect):
    strict = EngineConfig(guards=GuardConfig(grace=0, execution_budget=1))
    async with connect(tools=ToolProfile.MODEL, engine=strict) as client:
        await call(client, "check_tool_call", tool="book", args={"id": "a"})
        over = await call(client, "check_tool_call", tool="book", args={"id": "b"})
    assert over["verdict"] == "block" and over["reasons"][0]["rule"] == "budget"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"tool": "t", "args": {}, "value": None}, "null"),
        ({"tool": "t", "args": {}, "value": 1, "name": "v2"}, "sequential"),
        ({"tool": "t", "args": {}, "value": 1, "name": "two words"}, "name"),
        ({"tool": "bad name!", "args": {}, "value": 1}, "tool"),
        ({"tool": "t", "args": [1, 2], "value": 1}, "args"),
        ({"tool": "t", "args": {}, "value": "a\ud800b"}, "value"),
        ({"tool": "t", "args": {}, "value": 1, "extra": True}, "extra"),
    ],
)
async def test_bad_bind_arguments_get_one_clear_sentence(connect, db_path, arguments, field):
    async with connect(tools=ToolProfile.MODEL) as client:
        message = await call_error(client, "bind_value", **arguments)
        listed = await call(client, "check_ungrounded", tool="t", args={"a": "$v1"})
    assert field in message
    assert "Traceback" not in message and "SQL" not in message and str(db_path.parent) not in message
    assert listed["missing_refs"] == ["$v1"]


async def test_a_nul_inside_a_bound_value_is_kept_exactly(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        await call(client, "bind_value", tool="t", args={}, value={"raw": "a\x00b"})
        result = await call(client, "check_ungrounded", tool="u", args={"v": "$v1"})
    assert result["resolved_args"] == {"v": {"raw": "a\x00b"}}


async def test_arguments_nested_too_deep_are_refused_with_advice(connect):
    deep: object = 1
    for _ in range(40):
        deep = {"a": deep}
    async with connect(tools=ToolProfile.MODEL) as client:
        message = await call_error(client, "check_ungrounded", tool="t", args={"x": deep})
    assert "flatten" in message or "nest" in message


async def test_a_cap_of_zero_lets_every_call_through(connect):
    config = EngineConfig(guards=GuardConfig(default_tool_cap=0, tool_caps={"send": 0}, loop_window=0))
    async with connect(tools=ToolProfile.MODEL, engine=config) as client:
        verdicts = [
            (await call(client, "check_tool_call", tool=tool, args={"part": f"p{i}"}))["verdict"]
            for i in range(4)
            for tool in ("send", "archive")
        ]
    assert verdicts == ["allow"] * 8


async def test_a_loop_with_varying_arguments_is_caught(connect):
    config = EngineConfig(guards=GuardConfig(loop_window=5, loop_max_calls=3, grace=0))
    async with connect(tools=ToolProfile.MODEL, engine=config) as client:
        results = [
            await call(client, "check_tool_call", tool="solve", args={"guess": f"x{i}"}) for i in range(4)
        ]
    assert [result["verdict"] for result in results] == ["allow", "allow", "allow", "block"]
    assert results[-1]["reasons"][0]["rule"] == "loop"


async def test_a_thousand_bindings_still_give_a_short_message(connect):
    async with connect() as client:
        await call(client, "ingest", messages=[{"role": "user", "content": "Reconcile March."}])
        for index in range(1000):
            await call(client, "bind_value", tool="ledger", args={"row": index}, value=5000 + index)
        args = {"rows": [5000 + index for index in range(0, 1000, 10)], "stray": 777_777}
        result = await call(client, "check_ungrounded", tool="post", args=args)
    assert len(result["ungrounded"]) == 101
    assert result["ungrounded"][-1] == {"path": "stray", "value": 777_777, "suggestion": None}
    assert len(result["message"]) < 600 and "and 95 more" in result["message"]


async def test_a_field_of_a_bound_result_is_passed_with_its_type_and_a_wrong_field_is_refused(connect):
    invoice = {"id": "INV-7", "total": 1249.5, "lines": [{"sku": "A1", "qty": 3}]}
    async with connect() as client:
        await call(
            client, "bind_value", tool="get_invoice", args={"id": "INV-7"}, value=invoice, name="invoice"
        )
        paid = await call(
            client, "check_tool_call", tool="pay", args={"amount": "$invoice.total", "to": "acme"}
        )
        wrong = await call(
            client, "check_tool_call", tool="pay", args={"amount": "$invoice.totl", "to": "acme"}
        )
    assert paid["verdict"] == "allow" and paid["resolved_args"] == {"amount": 1249.5, "to": "acme"}
    assert wrong["verdict"] == "block" and wrong["resolved_args"] is None
    [reason] = [reason["message"] for reason in wrong["reasons"] if reason["rule"] == "missing_refs"]
    assert "$invoice has no field 'totl' (its fields: id, lines, total)" in reason
