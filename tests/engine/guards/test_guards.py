import math

import pytest
from memvm.engine import EngineConfig
from memvm.engine.guard_config import GuardConfig, GuardPreset, ToolKind
from memvm.engine.guards.call_log import KEPT_VERDICTS
from memvm.engine.guards.guards import runaway_reason
from memvm.engine.models.procedures import Outcome, ToolOutcome

from tests.conftest import NS, db_rows, user

pytestmark = pytest.mark.anyio


async def guarded(open_engine, **guards):
    engine = await open_engine(guards=GuardConfig(**guards))
    # A session whose user messages are on record, as with a host that ingests the conversation.
    await engine.session(NS, "s").ingest(messages=[user("Plan the trip, please.")])
    return engine


async def check(engine, tool, args=None, session="s"):
    return await engine.session(NS, session).check_tool_call(tool=tool, args=args or {})


async def ran(engine, tool, args, session="s"):
    """The call ran: its outcome is recorded (with no result to bind)."""
    call = ToolOutcome(tool=tool, args=args, outcome=Outcome.SUCCESS)
    await engine.session(NS, session).record_tool_outcome(call=call)


def rules(result):
    return [(reason.rule.value, reason.severity.value) for reason in result.reasons]


async def test_a_clean_call_is_allowed_and_counted(open_engine):
    engine = await guarded(open_engine)
    first = await check(engine, "book_hotel", {"city": "Oslo"})
    second = await check(engine, "book_hotel", {"city": "Bergen"})
    assert (first.verdict.value, first.reasons) == ("allow", [])
    assert (second.budget.kind, second.budget.used, second.budget.limit) == ("execution", 2, 15)


async def test_discovery_and_execution_calls_are_budgeted_apart(open_engine):
    engine = await guarded(open_engine, discovery_budget=2, execution_budget=1, grace=0)
    assert (await check(engine, "search_flights", {"q": "a"})).verdict.value == "allow"
    assert (await check(engine, "list_hotels", {"q": "b"})).verdict.value == "allow"
    over = await check(engine, "search_flights", {"q": "c"})
    assert rules(over) == [("budget", "block")] and over.budget.kind == "discovery"
    run = await check(engine, "book_hotel", {"id": "h"})
    assert run.verdict.value == "allow" and run.budget.used == 1


async def test_which_tools_are_discovery_is_configuration_not_only_names(open_engine):
    config = GuardConfig(
        discovery_tools=frozenset({"weather"}), execution_tools=frozenset({"search_and_buy"})
    )
    assert config.kind_of("weather") is ToolKind.DISCOVERY
    assert config.kind_of("search_and_buy") is ToolKind.EXECUTION
    assert config.kind_of("search_docs") is ToolKind.DISCOVERY
    engine = await guarded(open_engine, discovery_tools=frozenset({"weather"}))
    assert (await check(engine, "weather", {"city": "Rome"})).budget.kind == "discovery"


async def test_a_cap_of_zero_is_off_for_every_tool(open_engine):
    engine = await guarded(open_engine, default_tool_cap=0, tool_caps={"send": 0}, loop_window=0)
    verdicts = {
        (await check(engine, tool, {"n": str(i)})).verdict.value for i in range(6) for tool in ("send", "x")
    }
    assert verdicts == {"allow"}


async def test_a_per_tool_cap_warns_then_blocks(open_engine):
    engine = await guarded(open_engine, tool_caps={"send_email": 2}, grace=1)
    for to in ("a", "b"):
        assert (await check(engine, "send_email", {"to": to})).verdict.value == "allow"
    assert rules(await check(engine, "send_email", {"to": "c"})) == [("tool_cap", "warn")]
    assert rules(await check(engine, "send_email", {"to": "d"})) == [("tool_cap", "block")]
    assert (await check(engine, "other", {"to": "e"})).verdict.value == "allow"


async def test_a_repeated_call_is_answered_from_its_bound_result(open_engine):
    engine = await guarded(open_engine)
    args = {"from": "EUR", "to": "USD"}
    assert (await check(engine, "fx_rate", args)).verdict.value == "allow"
    await engine.session(NS, "s").bind_value(tool="fx_rate", args=args, value=1.0862)
    again = await check(engine, "fx_rate", {"to": "USD", "from": "EUR"})
    assert rules(again) == [("repeat", "block")]
    assert (again.cached_result, again.cached_ref) == (1.0862, "$v1")
    assert again.budget.used == 1


async def test_a_repeated_call_without_a_result_warns_then_blocks(open_engine):
    engine = await guarded(open_engine, grace=1)
    for expected in ([], [("repeat", "warn")], [("repeat", "block")]):
        assert rules(await check(engine, "get_stock", {"sku": "A1"})) == expected
        await ran(engine, "get_stock", {"sku": "A1"})


async def test_checking_a_call_again_before_it_ran_gives_the_same_verdict_and_counts_nothing(
    open_engine, db_url
):
    engine = await guarded(open_engine, grace=0, execution_budget=2)
    checks = [await check(engine, "get_stock", {"sku": "A1"}) for _ in range(3)]
    assert [(c.verdict.value, c.reasons, c.budget.used) for c in checks] == [("allow", [], 1)] * 3
    assert db_rows(db_url, "SELECT count(*) FROM guard_verdicts") == [(1,)]
    # Once it ran, the same call again is a repeat.
    await ran(engine, "get_stock", {"sku": "A1"})
    assert rules(await check(engine, "get_stock", {"sku": "A1"})) == [("repeat", "block")]


async def test_a_hooks_pre_tool_check_is_the_call_itself_so_a_second_is_a_repeat(open_engine):
    engine = await guarded(open_engine, grace=1)
    hook = {"tool": "get_stock", "args": {"sku": "A1"}, "will_run": True}
    verdicts = [(await engine.session(NS, "s").check_tool_call(**hook)).verdict.value for _ in range(3)]
    assert verdicts == ["allow", "warn", "block"]


async def test_a_loop_with_varying_arguments_is_caught(open_engine):
    engine = await guarded(open_engine, loop_window=6, loop_max_calls=3, grace=0)
    verdicts = [(await check(engine, "solve", {"guess": f"x{i}"})).verdict.value for i in range(4)]
    assert verdicts == ["allow", "allow", "allow", "block"]
    assert (await check(engine, "unrelated", {"q": "z"})).verdict.value == "allow"


async def test_a_polling_tool_is_exempt_from_repeat_loop_and_cache(open_engine):
    engine = await guarded(
        open_engine, polling_tools=frozenset({"job_status"}), loop_window=4, loop_max_calls=2
    )
    await engine.session(NS, "s").bind_value(tool="job_status", args={"id": "j1"}, value="running")
    results = [await check(engine, "job_status", {"id": "j1"}) for _ in range(6)]
    assert [r.verdict.value for r in results] == ["allow"] * 6
    assert all(r.cached_result is None for r in results)


async def test_a_polling_tool_still_counts_against_the_budget(open_engine):
    engine = await guarded(open_engine, polling_tools=frozenset({"job_status"}), execution_budget=3, grace=0)
    verdicts = []
    for _ in range(4):  # each poll runs
        verdicts.append((await check(engine, "job_status", {"id": "j1"})).verdict.value)
        await ran(engine, "job_status", {"id": "j1"})
    assert verdicts == ["allow", "allow", "allow", "block"]


async def test_a_tool_returning_the_same_number_over_and_over_has_run_away(open_engine):
    engine = await guarded(open_engine, runaway_repeats=3, grace=0)
    for step in range(3):
        await engine.session(NS, "s").bind_value(tool="optimize", args={"step": step}, value=0.5)
    result = await check(engine, "optimize", {"step": 3})
    assert rules(result) == [("runaway", "block")]
    assert "0.5 the last 3 times" in result.reasons[0].message


async def test_a_degenerate_result_is_a_runaway(open_engine):
    engine = await guarded(open_engine, grace=0)
    await engine.session(NS, "s").bind_value(tool="ratio", args={"a": "x"}, value="NaN")
    assert rules(await check(engine, "ratio", {"a": "y"})) == [("runaway", "block")]


@pytest.mark.parametrize(
    ("newest_first", "expected"),
    [
        ([], None),
        ([1.0, 2.0, 3.0], None),
        ([2.0, 2.0, 2.0], "returned 2.0 the last 3 times"),
        ([2, "2", 2.0], "returned 2 the last 3 times"),
        ([2.0, 2.0], None),
        (["ok", "ok", "ok"], None),
        ([math.inf], "returned a degenerate value (inf)"),
        ([1e305, 1.0], "returned a degenerate value (1e+305)"),
        ([10**400], "returned a degenerate value"),
        ([True, True, True], None),
    ],
)
def test_runaway_reasons(newest_first, expected):
    reason = runaway_reason(newest_first, 3)
    assert reason == expected or (expected and reason and reason.startswith(expected))


async def test_an_invented_number_warns_then_blocks_after_the_grace(open_engine):
    engine = await guarded(open_engine, grace=1)
    first = await check(engine, "transfer", {"amount": 740})
    second = await check(engine, "transfer", {"amount": 760})
    assert rules(first) == [("ungrounded", "warn")] and rules(second) == [("ungrounded", "block")]
    assert "amount=760" in second.reasons[0].message


async def test_without_user_messages_on_record_an_invented_number_only_warns(open_engine):
    engine = await open_engine(guards=GuardConfig(grace=0))
    results = [await check(engine, "transfer", {"amount": 740 + i}) for i in range(3)]
    assert [rules(r) for r in results] == [[("ungrounded", "warn")]] * 3


async def test_a_copied_bound_value_warns_with_its_reference_but_never_blocks(open_engine):
    engine = await guarded(open_engine, grace=0)
    await engine.session(NS, "s").bind_value(tool="fx", args={"eur": 1}, value=271.5)
    results = [await check(engine, f"pay{i}", {"usd": 271.5}) for i in range(3)]
    assert [rules(r) for r in results] == [[("copied_value", "warn")]] * 3
    assert "$v1" in results[0].reasons[0].message


async def test_an_unknown_reference_always_blocks_and_is_not_counted(open_engine):
    engine = await guarded(open_engine, grace=5)
    result = await check(engine, "pay", {"usd": "$v4"})
    assert rules(result) == [("missing_refs", "block")]
    assert result.resolved_args is None and result.budget.used == 0


async def test_references_are_resolved_before_the_call_is_identified(open_engine):
    engine = await guarded(open_engine)
    await engine.session(NS, "s").bind_value(tool="fx", args={"eur": 1}, value=271.5)
    first = await check(engine, "pay", {"usd": "$v1"})
    assert first.resolved_args == {"usd": 271.5}
    await ran(engine, "pay", {"usd": 271.5})  # the call as it ran, with the value in place
    assert rules(await check(engine, "pay", {"usd": "$v1"})) == [("repeat", "warn")]


async def test_a_new_turn_gives_a_fresh_allowance(open_engine):
    engine = await guarded(open_engine, execution_budget=1, grace=0)
    await check(engine, "book", {"id": "a"})
    assert (await check(engine, "book", {"id": "b"})).verdict.value == "block"
    await engine.session(NS, "s").begin_turn()
    fresh = await check(engine, "book", {"id": "b"})
    assert fresh.verdict.value == "allow" and fresh.budget.used == 1


async def test_counters_and_warnings_survive_a_restart(open_engine):
    config = EngineConfig(guards=GuardConfig(execution_budget=2, grace=1))
    engine = await open_engine(config)
    await engine.session(NS, "s").ingest(messages=[user("go")])
    await check(engine, "book", {"id": "a"})
    await check(engine, "book", {"id": "b"})
    assert rules(await check(engine, "book", {"id": "c"})) == [("budget", "warn")]
    await engine.close()
    reopened = await open_engine(config)
    after = await check(reopened, "book", {"id": "d"})
    assert rules(after) == [("budget", "block")] and after.budget.used == 3


async def test_the_strict_preset_blocks_at_the_first_violation_and_relaxed_warns_longer():
    strict, relaxed = GuardConfig.preset(GuardPreset.STRICT), GuardConfig.preset(GuardPreset.RELAXED)
    default = GuardConfig.preset(GuardPreset.DEFAULT)
    assert strict.grace == 0 < default.grace < relaxed.grace
    assert strict.execution_budget < default.execution_budget < relaxed.execution_budget
    assert strict.structural_constants < default.structural_constants < relaxed.structural_constants


async def test_the_call_log_keeps_only_the_current_and_previous_turn(open_engine, db_url):
    engine = await guarded(open_engine)
    for turn in range(5):
        await engine.session(NS, "s").begin_turn()
        await check(engine, "book", {"turn": str(turn)})
    turns = {row[0] for row in db_rows(db_url, "SELECT turn FROM guard_calls")}
    assert len(turns) <= 2


async def test_workspace_tools_meet_caps_only_and_use_no_budget(open_engine):
    engine = await guarded(
        open_engine, workspace_tools=frozenset({"Read", "Bash"}), execution_budget=2, grace=0
    )
    # Invented numbers, identical repeats, a loop of one tool: none of it stops a workspace tool.
    for n in range(10):
        result = await check(engine, "Read", {"file_path": f"/p/{n}.py", "offset": 137, "limit": 60})
        assert (result.verdict.value, result.reasons) == ("allow", [])
        assert (result.budget.kind, result.budget.limit) == (ToolKind.WORKSPACE.value, 0)
    for _ in range(3):
        assert (
            await check(engine, "Bash", {"command": "pytest -q", "timeout": 120000})
        ).verdict.value == "allow"
    # The execution budget is untouched by them; a named list wins over the workspace one.
    assert (await check(engine, "book_hotel", {"city": "Oslo"})).budget.used == 1
    assert (
        GuardConfig(workspace_tools=frozenset({"Bash"}), execution_tools=frozenset({"Bash"})).kind_of("Bash")
        is ToolKind.EXECUTION
    )


async def test_a_cap_still_applies_to_a_workspace_tool(open_engine):
    engine = await guarded(open_engine, workspace_tools=frozenset({"Bash"}), tool_caps={"Bash": 1}, grace=0)
    assert (await check(engine, "Bash", {"command": "make"})).verdict.value == "allow"
    blocked = await check(engine, "Bash", {"command": "make test"})
    assert rules(blocked) == [("tool_cap", "block")]


async def test_a_session_keeps_its_latest_verdicts_with_their_reasons(open_engine, db_url):
    engine = await guarded(open_engine, polling_tools=frozenset({"poll"}))
    for n in range(KEPT_VERDICTS + 20):
        await check(engine, "poll", {"n": n})
    [kept] = db_rows(
        db_url, "SELECT count(*), min(reasons), max(tool) FROM guard_verdicts WHERE session = 's'"
    )
    assert kept[0] == KEPT_VERDICTS and kept[2] == "poll"


async def test_a_model_with_memvm_tools_is_pointed_at_cached_result_and_bind_value(open_engine):
    engine = await guarded(open_engine)
    await engine.session(NS, "s").bind_value(tool="fx_rate", args={"to": "USD"}, value=1.0862)
    again = await check(engine, "fx_rate", {"to": "USD"})
    invented = await check(engine, "transfer", {"amount": 740})
    copied = await check(engine, "convert", {"rate": 1.0862})
    assert "its result is in cached_result ($v1)" in again.reasons[0].message
    assert "(bind it with bind_value)" in invented.reasons[0].message
    assert "rate=1.0862 -> $v1" in copied.reasons[0].message


async def test_a_model_without_memvm_tools_is_told_its_repeat_is_answered_below(open_engine):
    engine = await guarded(open_engine, memvm_tools=False)
    await engine.session(NS, "s").bind_value(tool="fx_rate", args={"to": "USD"}, value=1.0862)
    again = await check(engine, "fx_rate", {"to": "USD"})
    assert rules(again) == [("repeat", "block")]
    assert again.cached_result == 1.0862  # for the caller to show after the reasons
    [message] = [reason.message for reason in again.reasons]
    assert message == (
        "fx_rate already ran with these arguments this turn; its result is given below. "
        "Use it instead of calling again."
    )
