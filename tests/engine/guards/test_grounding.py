import pytest
from memvm.engine.guard_config import GuardConfig
from memvm.engine.models.procedures import Outcome, ToolOutcome

from tests.conftest import NS, assistant, user

pytestmark = pytest.mark.anyio


async def check(engine, args, session="s"):
    return await engine.session(NS, session).check_ungrounded(args=args)


def paths(result):
    return {item.path: item.suggestion for item in result.ungrounded}


async def test_numbers_from_nowhere_are_found_at_any_depth(engine):
    await engine.session(NS, "s").ingest(messages=[user("Book a table, please.")])
    result = await check(engine, {"booking": {"guests": [{"age": 37}, {"age": "41"}]}, "table": 12})
    assert result.verdict.value == "ungrounded"
    assert paths(result) == {"booking.guests[0].age": None, "booking.guests[1].age": None, "table": None}
    assert "booking.guests[0].age=37" in result.message


async def test_numbers_the_user_wrote_are_grounded(engine):
    await engine.session(NS, "s").ingest(
        messages=[user("Send $1,250.75 to Ana on the 14th"), assistant("Sure, 99.")]
    )
    result = await check(engine, {"amount": "1,250.75", "day": 14, "cents": 1250.75})
    assert result.verdict.value == "grounded" and result.ungrounded == []
    assistant_only = await check(engine, {"n": 99})
    assert paths(assistant_only) == {"n": None}


async def test_user_numbers_of_one_session_do_not_ground_another(engine):
    await engine.session(NS, "a").ingest(messages=[user("my budget is 4800")])
    await engine.session(NS, "b").ingest(messages=[user("hello")])
    assert (await check(engine, {"budget": 4800}, session="a")).verdict.value == "grounded"
    assert (await check(engine, {"budget": 4800}, session="b")).verdict.value == "ungrounded"


async def test_structural_constants_are_exempt_and_configurable(open_engine):
    default = await open_engine()
    assert (await check(default, {"page": 1, "limit": 10, "offset": 0})).verdict.value == "grounded"
    strict = await open_engine(guards=GuardConfig(structural_constants=frozenset({0})))
    assert set(paths(await check(strict, {"page": 1, "limit": 10, "offset": 0}))) == {"page", "limit"}


async def test_references_are_exempt_and_resolved(engine):
    await engine.session(NS, "s").bind_value(tool="fx", args={"eur": 250}, value=271.5)
    result = await check(engine, {"usd": "$v1", "memo": "pay $v1 now"})
    assert result.verdict.value == "grounded"
    assert result.resolved_args == {"usd": 271.5, "memo": "pay 271.5 now"}


async def test_a_literal_equal_to_a_bound_value_is_given_its_reference(engine):
    await engine.session(NS, "s").bind_value(tool="fx", args={"eur": 250}, value=271.5)
    await engine.session(NS, "s").bind_value(tool="tax", args={"usd": 271.5}, value="19.01")
    result = await check(engine, {"usd": 271.5, "tax": 19.01, "rounded": 271.50, "other": 77})
    assert paths(result) == {"usd": "$v1", "tax": "$v2", "rounded": "$v1", "other": None}
    assert "usd=271.5 -> $v1" in result.message


async def test_a_rounded_copy_of_a_bound_value_is_given_its_reference(engine):
    await engine.session(NS, "s").bind_value(tool="pi", args={}, value=3.14159265)
    result = await check(engine, {"two_places": 3.14, "four": "3.1416", "wrong": 3.15})
    assert paths(result) == {"two_places": "$v1", "four": "$v1", "wrong": None}


async def test_numbers_inside_a_structured_result_ground_their_copies(engine):
    await engine.session(NS, "s").bind_value(
        tool="quote", args={"sku": "a"}, value={"lines": [{"price": 18.75}], "n": 3}
    )
    result = await check(engine, {"price": 18.75})
    assert result.verdict.value == "grounded"


async def test_numbers_written_in_a_results_text_ground_their_copies(engine):
    # An MCP tool's text content, and a command's output as text alone.
    content = [{"type": "text", "text": "LIN-4411 Checkout fails (In Progress), 3 comments"}]
    await engine.session(NS, "s").bind_value(tool="list_issues", args={}, value=content)
    await engine.session(NS, "s").bind_value(tool="sh", args={"c": "wc"}, value="  120 lines, 4.5 KB")
    result = await check(engine, {"id": 4411, "comments": 3, "lines": 120, "kb": 4.5, "made_up": 77})
    assert [item.path for item in result.ungrounded] == ["made_up"]


async def test_numbers_in_a_result_too_large_to_bind_ground_until_its_page_is_forgotten(engine):
    # A long file the agent read: stored as a page, too large to bind, its numbers still read.
    source = (
        "\n".join(f"line {i}: retry_after = 30  # budget cap" for i in range(400)) + "\nMAX_RETRIES = 4417"
    )
    recorded = await engine.session(NS, "s").record_tool_outcome(
        call=ToolOutcome(
            tool="Read", args={"file_path": "/src/retry.py"}, outcome=Outcome.SUCCESS, result=source
        )
    )
    assert recorded.ref is None and recorded.page_id is not None
    assert paths(await check(engine, {"retries": 4417, "made_up": 9931})) == {"made_up": None}
    await engine.session(NS, "s").forget(page_id=recorded.page_id)
    assert paths(await check(engine, {"retries": 4417})) == {"retries": None}


async def test_an_unknown_reference_is_missing_and_nothing_is_resolved(engine):
    await engine.session(NS, "s").bind_value(tool="t", args={}, value=1.5)
    result = await check(engine, {"a": "$v1", "b": "$v2", "c": "$total"})
    assert result.verdict.value == "missing_refs"
    assert result.missing_refs == ["$total", "$v2"]
    assert result.resolved_args is None
    assert "$v2" in result.message and "bind_value" in result.message


async def test_the_message_stays_short_with_a_thousand_bindings_and_many_literals(engine):
    for index in range(1000):
        await engine.session(NS, "s").bind_value(tool="t", args={"i": index}, value=1000 + index)
    args = {f"k{index}": 1000 + index for index in range(40)} | {
        f"z{index}": 50_000 + index for index in range(40)
    }
    result = await check(engine, args)
    assert len(result.ungrounded) == 80
    assert result.message.count("->") == 5
    assert "and 35 more" in result.message
    assert len(result.message) < 600


async def test_without_user_messages_on_record_the_message_says_user_numbers_are_fine(engine):
    result = await check(engine, {"amount": 4200})
    assert result.user_messages_on_record is False
    assert "if the user gave these numbers, go ahead" in result.message


async def no_tools(open_engine):
    """An engine whose guards speak to a model without memvm's tools, as a host's hook does."""
    return await open_engine(guards=GuardConfig(memvm_tools=False))


async def test_a_model_without_memvm_tools_is_told_where_numbers_come_from_without_bind_value(open_engine):
    engine = await no_tools(open_engine)
    await engine.session(NS, "s").ingest(messages=[user("Book a table, please.")])
    result = await check(engine, {"table": 12})
    assert paths(result) == {"table": None}
    assert "No source for table=12: take numbers from the user or from a tool result you have read" in (
        result.message
    )
    assert "bind_value" not in result.message and "$v" not in result.message


async def test_a_model_without_memvm_tools_copying_a_bound_value_or_rounding_it_is_grounded(open_engine):
    engine = await no_tools(open_engine)
    await engine.session(NS, "s").bind_value(tool="fx", args={"eur": 250}, value=271.5)
    await engine.session(NS, "s").bind_value(tool="pi", args={}, value=3.14159265)
    result = await check(engine, {"usd": 271.5, "two_places": 3.14, "other": 77})
    assert paths(result) == {"other": None}
    assert "$v" not in result.message


async def test_a_model_without_memvm_tools_has_its_dollar_names_checked_as_text(open_engine):
    engine = await no_tools(open_engine)
    await engine.session(NS, "s").bind_value(tool="fx", args={"eur": 250}, value=271.5)
    args = {"command": "for v1 in a b; do echo $v1; done", "usd": "$v1", "note": "$v9"}
    result = await check(engine, args)
    assert result.verdict.value == "grounded"
    assert (result.missing_refs, result.resolved_args) == ([], args)
