import pytest
from memvm.engine.models.pages import Level
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.procedures.outcomes import FIX_WINDOW, VALUES_PER_ARG

from tests.conftest import NS, db_rows

pytestmark = pytest.mark.anyio


async def record(engine, tool, args, outcome="success", session="s", **fields):
    call = ToolOutcome(tool=tool, args=args, outcome=Outcome(outcome), **fields)
    return await engine.session(NS, session).record_tool_outcome(call=call)


def rows(db_url, sql, params=()):
    return db_rows(db_url, sql, params)


async def fail(engine, tool="book", args=None, message="invalid date '12/05/2026'", **fields):
    return await record(
        engine, tool, args or {"date": "12/05/2026"}, "failure", error_message=message, **fields
    )


async def test_a_call_is_stored_with_its_session_and_turn(engine, db_url):
    await engine.session(NS, "s").begin_turn()
    result = await record(engine, "weather", {"city": "Oslo"}, duration_ms=42.5, goal="pack for the trip")
    assert rows(db_url, "SELECT session, turn, tool, outcome, duration_ms, goal FROM tool_calls") == [
        ("s", 1, "weather", "success", 42.5, "pack for the trip")
    ]
    assert result.call_id == 1


async def test_a_large_result_becomes_a_tool_result_page_that_faults_in(engine):
    report = " ".join(
        f"Line {i}: the nightly backup of volume {i} finished without errors." for i in range(60)
    )
    result = await record(engine, "backup_report", {"day": "mon"}, result=report)
    assert result.page_id is not None
    fault = await engine.session(NS, "s").page_fault(page_id=result.page_id, target_level=Level.FULL)
    assert fault.content == report and fault.type.value == "tool_result" and fault.role.value == "tool"
    assert fault.provenance == f"tool:backup_report call {result.call_id}"


async def test_a_small_result_is_bound_and_answers_the_same_call_from_cache(engine):
    result = await record(engine, "fx_rate", {"from": "EUR", "to": "USD"}, result=1.0862)
    assert (result.ref, result.page_id) == ("$v1", None)
    check = await engine.session(NS, "s").check_tool_call(tool="fx_rate", args={"to": "USD", "from": "EUR"})
    assert (check.verdict.value, check.cached_result) == ("block", 1.0862)


async def test_failures_are_not_bound(engine):
    assert (await fail(engine, result={"error": 1})).ref is None


async def test_the_same_result_over_and_over_is_reported_as_runaway(engine):
    results = [await record(engine, "optimize", {"step": step}, result=0.25) for step in range(3)]
    assert [r.runaway for r in results[:2]] == [None, None]
    assert results[2].runaway == "returned 0.25 the last 3 times"


async def test_a_success_after_a_failure_with_other_arguments_is_linked_as_its_fix(engine, db_url):
    failed = await fail(engine)
    fixed = await record(engine, "book", {"date": "2026-05-12"})
    assert fixed.fix is not None and fixed.fix.fixed_call_id == failed.call_id
    assert fixed.fix.delta["changed"] == {"date": {"from": "12/05/2026", "to": "2026-05-12"}}
    links = rows(db_url, "SELECT call_id, fixed_by, fixes FROM tool_calls ORDER BY call_id")
    assert links == [(failed.call_id, fixed.call_id, None), (fixed.call_id, None, failed.call_id)]
    (typical,) = rows(db_url, "SELECT typical_fix FROM error_patterns")
    assert '"to":"2026-05-12"' in typical[0]


async def test_a_success_of_another_tool_fixes_nothing(engine):
    await fail(engine, tool="book")
    assert (await record(engine, "search", {"date": "2026-05-12"})).fix is None


async def test_a_success_with_identical_arguments_is_a_retry_not_a_fix(engine):
    await fail(engine, args={"date": "12/05/2026"})
    assert (await record(engine, "book", {"date": "12/05/2026"})).fix is None


async def test_a_failure_outside_the_window_is_not_linked(engine):
    await fail(engine)
    for index in range(FIX_WINDOW):
        await record(engine, "other", {"n": index})
    assert (await record(engine, "book", {"date": "2026-05-12"})).fix is None


async def test_a_failure_inside_the_window_is_linked(engine):
    await fail(engine)
    for index in range(FIX_WINDOW - 1):
        await record(engine, "other", {"n": index})
    assert (await record(engine, "book", {"date": "2026-05-12"})).fix is not None


async def test_an_already_fixed_failure_is_not_fixed_again(engine):
    await fail(engine)
    assert (await record(engine, "book", {"date": "2026-05-12"})).fix is not None
    assert (await record(engine, "book", {"date": "2026-05-13"})).fix is None


async def test_the_newest_unfixed_failure_is_the_one_fixed(engine):
    older = await fail(engine, args={"date": "1/5"})
    newer = await fail(engine, args={"date": "2/5"})
    first = await record(engine, "book", {"date": "2026-05-02"})
    second = await record(engine, "book", {"date": "2026-05-01"})
    assert (first.fix.fixed_call_id, second.fix.fixed_call_id) == (newer.call_id, older.call_id)


async def test_a_failure_in_another_session_is_not_fixed_here(engine):
    await fail(engine, session="a")
    assert (await record(engine, "book", {"date": "2026-05-12"}, session="b")).fix is None


async def test_errors_differing_only_in_ids_group_into_one_pattern(engine, db_url):
    await fail(engine, args={"user": 1}, message="User 4411 not found (request req_88a1)")
    await fail(engine, args={"user": 2}, message="User 9 not found (request req_02)", session="other")
    await fail(engine, args={"user": 3}, message="Quota exceeded")
    await fail(engine, args={"user": 4}, error_type="QuotaExceeded", message="Quota exceeded for 4")
    patterns = rows(db_url, "SELECT signature, count FROM error_patterns ORDER BY count DESC, signature")
    assert patterns == [
        ("user <n> not found (request <id>)", 2),
        ("QuotaExceeded", 1),
        ("quota exceeded", 1),
    ]


async def test_a_cancelled_call_is_counted_but_teaches_no_error(engine, db_url):
    await record(engine, "book", {"date": "x"}, "cancelled")
    assert rows(db_url, "SELECT calls, successes FROM tool_stats") == [(1, 0)]
    assert rows(db_url, "SELECT count(*) FROM error_patterns") == [(0,)]


async def test_values_kept_per_argument_are_bounded(engine, db_url):
    for index in range(VALUES_PER_ARG * 3):
        await record(engine, "search", {"query": f"q{index}"})
    assert rows(db_url, "SELECT count(*) FROM success_values WHERE goal = ''") == [(VALUES_PER_ARG,)]
