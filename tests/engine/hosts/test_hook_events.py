import pytest
from memvm.engine.models.procedures import Outcome, ToolOutcome

from tests.conftest import NS, db_rows

pytestmark = pytest.mark.anyio


async def test_an_event_recorded_twice_is_one_row_and_keeps_its_first_answer(engine, db_url):
    assert await engine.hook_events.handled(namespace=NS, digest="d1") is None
    await engine.hook_events.record(
        namespace=NS, host="claude-code", session="s", digest="d1", event="PreToolUse", answer="no"
    )
    await engine.hook_events.record(
        namespace=NS, host="claude-code", session="s", digest="d1", event="PreToolUse", answer="yes"
    )

    seen = await engine.hook_events.handled(namespace=NS, digest="d1")
    assert (seen.event, seen.answer) == ("PreToolUse", "no")
    assert await engine.hook_events.handled(namespace=NS + "-other", digest="d1") is None
    assert db_rows(db_url, "SELECT count(*) FROM hook_events") == [(1,)]


async def test_an_event_is_found_by_the_beginning_of_its_digest_in_its_namespace_only(engine):
    await engine.hook_events.record(
        namespace=NS, host="gemini-cli", session="s", digest="ab12" + "0" * 60, event="e"
    )
    for prefix, found in (("ab12", True), ("ab1", True), ("ab13", False), ("ab", True), ("b", False)):
        assert await engine.hook_events.handled_with_prefix(namespace=NS, prefix=prefix) is found, prefix
    assert not await engine.hook_events.handled_with_prefix(namespace=NS + "-other", prefix="ab12")


async def test_a_call_s_recorded_outcomes_are_counted_whatever_its_key_order_or_secrets(engine):
    key = "sk_live_" + "Ab1" * 8
    for args in ({"a": 1, "token": key}, {"token": key, "a": 1}, {"a": 2, "token": key}):
        await engine.session(NS, "s").record_tool_outcome(
            call=ToolOutcome(tool="pay", args=args, outcome=Outcome.SUCCESS)
        )
    count = engine.hook_events.outcomes_recorded
    assert await count(namespace=NS, session="s", tool="pay", args={"token": key, "a": 1}) == 2
    assert await count(namespace=NS, session="other", tool="pay", args={"token": key, "a": 1}) == 0
    assert await count(namespace=NS, session="s", tool="refund", args={"token": key, "a": 1}) == 0
