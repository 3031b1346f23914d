import pytest
from memvm.engine.models.procedures import Outcome, ToolOutcome

from tests.conftest import NS

pytestmark = pytest.mark.anyio


async def record(engine, tool, args, outcome="success", session="old", **fields):
    call = ToolOutcome(tool=tool, args=args, outcome=Outcome(outcome), **fields)
    return await engine.session(NS, session).record_tool_outcome(call=call)


async def teach(engine):
    """An old session where book failed on a date format, was fixed, and search worked twice."""
    await record(
        engine,
        "book",
        {"date": "12/05/2026"},
        "failure",
        error_message="invalid date '12/05/2026'",
        duration_ms=100,
    )
    await record(engine, "book", {"date": "2026-05-12", "city": "Oslo"}, duration_ms=300, goal="Book a trip")
    await record(engine, "search", {"q": "hotels"}, duration_ms=50)
    await record(engine, "search", {"q": "hotels"}, duration_ms=70)


async def test_a_new_session_receives_what_an_old_one_learned(engine):
    await teach(engine)
    knowledge = await engine.namespace(NS).procedural_knowledge(tools=["book"])
    (book,) = knowledge.tools
    assert (book.calls, book.success_rate, book.mean_duration_ms) == (2, 0.5, 200.0)
    (error,) = book.common_errors
    assert error.error_type == "invalid date <q>" and error.count == 1 and error.fix_count == 1
    assert error.typical_fix_text == 'changed date from "12/05/2026" to "2026-05-12"; added city="Oslo"'
    assert {(hint.arg, hint.value) for hint in book.success_hints} == {
        ("date", "2026-05-12"),
        ("city", "Oslo"),
    }


async def test_without_tools_named_the_latest_used_tools_come_first(engine):
    await teach(engine)
    knowledge = await engine.namespace(NS).procedural_knowledge()
    assert [tool.tool for tool in knowledge.tools] == ["search", "book"]
    search = knowledge.tools[0]
    assert search.success_hints[0].value == "hotels" and search.success_hints[0].count == 2


async def test_success_hints_follow_the_goal_whatever_its_case_and_spacing(engine):
    await teach(engine)
    knowledge = await engine.namespace(NS).procedural_knowledge(goal="  book A trip ")
    assert [tool.tool for tool in knowledge.tools] == ["book"]
    assert {hint.goal for hint in knowledge.tools[0].success_hints} == {"book a trip"}


async def test_an_error_brings_back_how_it_was_fixed_before(engine):
    await teach(engine)
    knowledge = await engine.namespace(NS).procedural_knowledge(error_type="invalid date '1/1/2020'")
    (guidance,) = knowledge.guidance
    assert (guidance.tool, guidance.failed_call_id, guidance.fixed_call_id, guidance.session) == (
        "book",
        1,
        2,
        "old",
    )
    assert guidance.delta["changed"]["date"]["to"] == "2026-05-12"
    assert [tool.tool for tool in knowledge.tools] == ["book"]


async def test_an_explicit_error_type_finds_its_fixes(engine):
    await record(engine, "send", {"to": "a"}, "failure", error_type="RateLimited")
    await record(engine, "send", {"to": "a", "delay": 5})
    (guidance,) = (await engine.namespace(NS).procedural_knowledge(error_type="RateLimited")).guidance
    assert guidance.delta["added"] == {"delay": 5}


async def test_patterns_of_one_namespace_stay_in_it(engine):
    await teach(engine)
    assert (await engine.namespace("elsewhere").procedural_knowledge()).tools == []


async def test_everything_learned_survives_a_restart(open_engine):
    engine = await open_engine()
    await teach(engine)
    before = await engine.namespace(NS).procedural_knowledge(error_type="invalid date 'x'")
    await engine.close()
    reopened = await open_engine()
    after = await reopened.namespace(NS).procedural_knowledge(error_type="invalid date 'x'")
    assert after == before and after.guidance
    fixed = await record(reopened, "book", {"date": "13/05"}, "failure", error_message="invalid date '13/05'")
    assert fixed.call_id == 5


async def test_call_ids_are_counted_per_namespace(engine):
    failed = ToolOutcome(tool="book", args={"date": "1/1"}, outcome=Outcome.FAILURE, error_message="bad date")
    ids = {}
    for namespace in ("a", "b", "a", "a", "b"):
        ids.setdefault(namespace, []).append(
            (await engine.session(namespace, "s").record_tool_outcome(call=failed)).call_id
        )
    assert ids == {"a": [1, 2, 3], "b": [1, 2]}
