"""An event sent again is the same event; the same call made again after it completed is a new
call, for hosts that give a call no id of its own (an older Claude Code; Gemini CLI within one
millisecond). Through the hook's own entry point, and (end-to-end stage) the real process."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import Answer, rows, run_hook, verdicts


def _without_id(event: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in event.items() if key != "tool_use_id"}


# Per host: its shell tool, and its prompt, pre-tool and result events for one command, with no call
# id (Gemini CLI's `timestamp` stays the same, as for calls within one millisecond).
HOSTS: dict[str, tuple[str, Callable[[], Any], Callable[[], Any], Callable[[str], Any]]] = {
    "claude-code": (
        "Bash",
        lambda: cc.prompt("run the tests"),
        lambda: _without_id(cc.pre_tool({"command": "npm test"}, "")),
        lambda output: _without_id(cc.post_tool({"command": "npm test"}, {"stdout": output}, "")),
    ),
    "gemini-cli": (
        "run_shell_command",
        lambda: gc.before_agent("run the tests"),
        lambda: gc.before_tool({"command": "npm test"}),
        lambda output: gc.after_tool({"command": "npm test"}, output),
    ),
}


def _denied(host: str, answer: dict[str, Any]) -> bool:
    if host == "claude-code":
        return answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"
    return answer.get("decision") == "deny"


def _capped(tmp_path: Path, tool: str, cap: int) -> tuple[str, str]:
    path = tmp_path / "guards.json"
    path.write_text(json.dumps({"tool_caps": {tool: cap}, "grace": 0}))
    return ("--guard-config", str(path))


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_an_identical_call_after_the_last_completed_is_counted_and_its_events_sent_again_are_not(
    tmp_path, host, hook_runner
):
    db = tmp_path / "m.db"
    tool, prompt, pre_tool, result = HOSTS[host]
    extra = _capped(tmp_path, tool, 2)

    def hook(event: Any) -> dict[str, Any]:
        answer, errors = hook_runner(host, db, event, *extra)
        assert errors == []
        return answer

    hook(prompt())
    # The first call: its check and its result, each sent twice by the host.
    assert hook(pre_tool()) == {} and hook(pre_tool()) == {}
    hook(result("12 passing"))
    hook(result("12 passing"))
    assert verdicts(db) == [(tool, "allow")]
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(1,)]

    # The same call again, now the first has completed: a second call, with its own result.
    assert hook(pre_tool()) == {}
    hook(result("12 passing"))
    assert verdicts(db) == [(tool, "allow"), (tool, "allow")]
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(2,)]

    # A third is past the cap of 2; sent again, it gets the same denial and counts no further.
    denied = hook(pre_tool())
    assert _denied(host, denied)
    assert hook(pre_tool()) == denied
    assert [verdict for _, verdict in verdicts(db)] == ["allow", "allow", "block"]


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_a_tool_capped_at_one_call_runs_once_however_often_it_is_asked_for(tmp_path, host):
    db = tmp_path / "m.db"
    tool, prompt, pre_tool, result = HOSTS[host]
    extra = _capped(tmp_path, tool, 1)
    run_hook(host, db, prompt(), *extra)
    answers: list[Answer] = []
    for _ in range(5):
        answers.append(run_hook(host, db, pre_tool(), *extra))
        if not _denied(host, answers[-1][0]):
            run_hook(host, db, result("12 passing"), *extra)  # the host ran it
    assert [_denied(host, answer) for answer, _ in answers] == [False, True, True, True, True]
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(1,)]


def test_the_same_words_typed_again_are_a_new_prompt_and_an_event_sent_again_is_not(tmp_path):
    db = tmp_path / "m.db"
    for event in (
        cc.prompt("continue"),
        cc.prompt("continue"),  # sent again (a timeout): still the session's last page
        cc.stop("Done."),
        cc.prompt("continue"),  # typed again after the reply: a new prompt, a new turn
        cc.stop("Done."),  # the same words ending another turn: a new reply
        cc.stop("Done."),  # and that one sent again
    ):
        answer, errors = run_hook("claude-code", db, event)
        assert errors == [] and answer == {}
    said = rows(db, "SELECT role, turn FROM pages WHERE type = 'transcript' ORDER BY rowid")
    assert said == [("user", 1), ("assistant", 1), ("user", 2), ("assistant", 2)]
