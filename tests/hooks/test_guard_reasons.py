"""What a host's model is told when a guard stops or warns a call under `memvm hook`.

That model has none of memvm's tools: every reason it can get says what to do with the tools it
has, and names neither memvm's tools nor its `$vN` references. Each rule is played with host
traffic through the hook's own entry point; the reasons the MCP server gives a model that has
memvm's tools are in tests/server/test_guard_tools.py.
"""

import json
from pathlib import Path
from typing import Any

from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import run_hook, verdicts

# What only a model with memvm's tools could act on.
_MEMVM_ONLY = ("bind_value", "cached_result", "check_tool_call", "$v", "page_fault")


def claude(db: Path, event: dict[str, Any], *extra: str) -> dict[str, Any]:
    answer, errors = run_hook("claude-code", db, event, *extra)
    assert errors == []
    return answer


def told(answer: dict[str, Any]) -> str:
    """What the model reads of an answer: a deny's reason, or a warning's context."""
    output = answer["hookSpecificOutput"]
    return output.get("permissionDecisionReason") or output["additionalContext"]


def names_only_what_the_model_has(text: str) -> bool:
    return not [word for word in _MEMVM_ONLY if word in text]


def settings(tmp_path: Path, **guards: Any) -> tuple[str, str]:
    path = tmp_path / "guards.json"
    path.write_text(json.dumps(guards))
    return ("--guard-config", str(path))


def ran(db: Path, tool: str, args: dict[str, Any], response: Any, n: int, *extra: str) -> dict[str, Any]:
    """One call through the hook: its check, then its result when it was let through."""
    answer = claude(db, cc.pre_tool(args, f"toolu_{n}", tool=tool), *extra)
    if "permissionDecision" not in answer.get("hookSpecificOutput", {}):
        claude(db, cc.post_tool(args, response, f"toolu_{n}", tool=tool), *extra)
    return answer


FORECAST = "mcp__weather__get_forecast"


def test_a_repeat_is_denied_with_the_earlier_result_given_below_the_reason(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("what is the weather in Oslo"))
    ran(db, FORECAST, {"city": "Oslo"}, [{"type": "text", "text": "light rain, 7 C"}], 1)
    reason = told(claude(db, cc.pre_tool({"city": "Oslo"}, "toolu_2", tool=FORECAST)))
    assert reason == (
        f"memvm guard: {FORECAST} already ran with these arguments this turn; its result is given "
        'below. Use it instead of calling again. The earlier result: [{"text": "light rain, 7 C", '
        '"type": "text"}]'
    )
    assert names_only_what_the_model_has(reason)


def test_gemini_cli_is_denied_a_repeat_with_the_earlier_result_and_no_memvm_names(tmp_path):
    db = tmp_path / "m.db"
    run_hook("gemini-cli", db, gc.before_agent("is the site up?"))
    call = {"url": "https://example.com/status"}
    fetch = gc.before_tool(call, tool="web_fetch")
    run_hook("gemini-cli", db, {**fetch, "timestamp": "2025-12-01T10:30:01Z"})
    run_hook("gemini-cli", db, gc.after_tool(call, "all systems operational", tool="web_fetch"))
    denied, _ = run_hook("gemini-cli", db, {**fetch, "timestamp": "2025-12-01T10:30:02Z"})
    assert denied["decision"] == "deny"
    assert "its result is given below" in denied["reason"] and "all systems operational" in denied["reason"]
    assert names_only_what_the_model_has(denied["reason"])


def test_a_repeat_whose_result_was_not_recorded_is_told_to_use_the_result_it_got(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("what is the weather in Oslo"))
    answers = [claude(db, cc.pre_tool({"city": "Oslo"}, f"toolu_{n}", tool=FORECAST)) for n in range(3)]
    assert [told(answer) for answer in answers[1:]] == [
        f"memvm guard warning: {FORECAST} already ran with these arguments this turn; use the result you "
        "got instead of calling again.",
        f"memvm guard: {FORECAST} already ran with these arguments this turn; use the result you got "
        "instead of calling again.",
    ]


def test_an_unsourced_number_is_told_to_come_from_the_user_or_a_result_it_has_read(tmp_path):
    db = tmp_path / "m.db"
    extra = settings(tmp_path, consequential_tools=["mcp__pay__*"])
    claude(db, cc.prompt("set the login bug's estimate, and pay the 120 EUR invoice"), *extra)
    update = cc.pre_tool({"issue": "LIN-4398", "estimate": 13}, "toolu_1", tool="mcp__linear__update_issue")
    warned = told(claude(db, update, *extra))
    denied = told(claude(db, cc.pre_tool({"eur": 125}, "toolu_2", tool="mcp__pay__send"), *extra))
    assert warned == (
        "memvm guard warning: No source for estimate=13: take numbers from the user or from a tool "
        "result you have read, never estimate them."
    )
    assert denied.startswith("memvm guard: No source for eur=125: take numbers from the user or from a tool")
    assert names_only_what_the_model_has(warned) and names_only_what_the_model_has(denied)


def test_a_guard_config_cannot_give_the_hosts_model_memvm_tools(tmp_path):
    db = tmp_path / "m.db"
    extra = settings(tmp_path, memvm_tools=True)
    claude(db, cc.prompt("set the login bug's estimate"), *extra)
    update = cc.pre_tool({"issue": "LIN-4398", "estimate": 13}, "toolu_1", tool="mcp__linear__update_issue")
    warned = told(claude(db, update, *extra))
    assert "from a tool result you have read" in warned and names_only_what_the_model_has(warned)


def test_a_number_copied_from_a_result_it_read_is_never_answered_with_a_reference(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("convert the 120 EUR invoice to dollars at today's rate"))
    # Tools whose whole answer is one number: the rate, and pi to eight places.
    ran(db, "mcp__fx__rate", {"from": "EUR", "to": "USD"}, "1.0862", 1)
    ran(db, "mcp__math__pi", {}, "3.14159265", 2)
    convert = {"eur": 120, "rate": 1.0862, "pi": 3.14}
    assert claude(db, cc.pre_tool(convert, "toolu_3", tool="mcp__fx__convert")) == {}
    assert verdicts(db)[-1] == ("mcp__fx__convert", "allow")


def test_dollar_names_in_a_hosts_call_are_its_own_text_not_missing_references(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("list the two versions, then tag the release"))
    ran(db, "Bash", {"command": "git tag --list"}, {"stdout": "v1\nv2\n", "stderr": ""}, 1)
    loop = {"command": "for v1 in $(git tag --list); do echo $v1; done"}
    assert claude(db, cc.pre_tool(loop, "toolu_2")) == {}
    tag = {"name": "$v9-rc", "message": "$v9"}
    assert claude(db, cc.pre_tool(tag, "toolu_3", tool="mcp__github__create_tag")) == {}
    assert [verdict for _, verdict in verdicts(db)] == ["allow"] * 3


def test_a_spent_budget_says_to_answer_with_what_it_has(tmp_path):
    db = tmp_path / "m.db"
    extra = settings(tmp_path, execution_budget=2, grace=0)
    claude(db, cc.prompt("what is the weather in Oslo, Bergen and Tromsø"), *extra)
    answers = [
        claude(db, cc.pre_tool({"city": city}, f"toolu_{city}", tool=FORECAST), *extra)
        for city in ("Oslo", "Bergen", "Tromsø")
    ]
    reason = told(answers[-1])
    assert reason == (
        "memvm guard: This turn's budget of 2 execution calls is spent; answer with what you have, or "
        "ask the user before doing more."
    )


def test_a_tool_past_its_cap_is_told_to_use_its_results(tmp_path):
    db = tmp_path / "m.db"
    extra = settings(tmp_path, tool_caps={"mcp__slack__post_message": 1}, grace=0)
    claude(db, cc.prompt("tell the team the deploy is done"), *extra)
    post = "mcp__slack__post_message"
    claude(db, cc.pre_tool({"channel": "deploys", "text": "done"}, "toolu_1", tool=post), *extra)
    again = cc.pre_tool({"channel": "general", "text": "done"}, "toolu_2", tool=post)
    reason = told(claude(db, again, *extra))
    assert reason == f"memvm guard: {post} may run 1 times per turn and already has; use its results."


def test_a_loop_of_changing_arguments_is_told_to_rethink(tmp_path):
    db = tmp_path / "m.db"
    extra = settings(tmp_path, loop_window=4, loop_max_calls=2, grace=0)
    claude(db, cc.prompt("find the page about the outage"), *extra)
    fetch = "mcp__wiki__get_page"
    answers = [
        claude(db, cc.pre_tool({"title": title}, f"toolu_{title}", tool=fetch), *extra)
        for title in ("Outage", "Outages", "Incident")
    ]
    reason = told(answers[-1])
    assert "stop and rethink the approach, or answer with what you have" in reason
    assert names_only_what_the_model_has(reason)


def test_a_tool_returning_the_same_number_is_told_to_change_the_approach(tmp_path):
    db = tmp_path / "m.db"
    extra = settings(tmp_path, grace=0)
    claude(db, cc.prompt("tune the learning rate until the loss drops"), *extra)
    train = "mcp__lab__train"
    for n, rate in enumerate(("high", "medium", "low")):
        assert ran(db, train, {"rate": rate}, "0.5", n, *extra) == {}
    reason = told(claude(db, cc.pre_tool({"rate": "tiny"}, "toolu_9", tool=train), *extra))
    assert reason == (
        f'memvm guard: {train} returned "0.5" the last 3 times; change the approach instead of calling it '
        "again."
    )


def test_the_same_command_with_the_same_result_is_told_to_change_something_first(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("why does the build fail?"))
    output = {"stdout": "error: missing header foo.h", "stderr": "", "interrupted": False}
    answers = [ran(db, "Bash", {"command": "make build"}, output, n) for n in range(6)]
    reason = told(answers[-1])
    assert "Change something first, or stop and report what it shows." in reason
    assert names_only_what_the_model_has(reason)


def test_arguments_that_cannot_be_checked_are_told_to_be_sent_plainly(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("store the config"))
    deep: Any = "x"
    for _ in range(40):
        deep = {"a": deep}
    reason = told(claude(db, cc.pre_tool({"config": deep}, "toolu_1", tool="mcp__kv__put")))
    assert reason.startswith("memvm guard: the arguments cannot be checked") and "flatten them" in reason
    assert names_only_what_the_model_has(reason)
