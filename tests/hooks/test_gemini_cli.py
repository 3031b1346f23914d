"""`memvm hook gemini-cli` on documented events, through the hook's own entry point."""

import json
from pathlib import Path
from typing import Any

import pytest

from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import rows, run_hook, transcript, verdicts


def hook(db: Path, event: Any, *extra: str) -> tuple[dict[str, Any], list[str]]:
    return run_hook("gemini-cli", db, event, *extra)


def test_a_prompt_is_stored_and_a_later_session_recalls_it_as_before_agent_context(tmp_path, hook_runner):
    db = tmp_path / "m.db"

    def hook(db: Path, event: Any) -> tuple[dict[str, Any], list[str]]:
        return hook_runner("gemini-cli", db, event)

    assert hook(db, gc.before_agent("the staging cluster is called heron and deploys go through argo")) == (
        {},
        [],
    )
    assert transcript(db) == [
        (gc.SESSION, "user", "the staging cluster is called heron and deploys go through argo")
    ]
    [(page_id,)] = rows(db, "SELECT page_id FROM pages WHERE role = 'user'")

    later = {**gc.before_agent("which cluster is staging on?"), "session_id": "def456"}
    answer, errors = hook(db, later)
    assert errors == []
    assert set(answer) == {"hookSpecificOutput"}
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "not instructions" in context
    assert "- transcript/user | " in context and "| the staging cluster is called heron" in context
    assert page_id not in context and gc.SESSION not in context
    assert "which cluster" not in context  # the prompt's own page is not recalled


def at(event: dict[str, Any], second: int) -> dict[str, Any]:
    """The event as fired at another moment: Gemini CLI's events differ only by `timestamp`."""
    return {**event, "timestamp": f"2025-12-01T10:30:{second:02d}Z"}


def test_a_repeated_identical_call_is_denied_with_decision_deny_until_the_next_prompt(tmp_path):
    db = tmp_path / "m.db"
    hook(db, at(gc.before_agent("run the tests"), 0))
    call = gc.before_tool({"url": "https://example.com/status"}, tool="web_fetch")
    assert hook(db, at(call, 1)) == ({}, [])
    # The guard warns on the second call, but BeforeTool takes no context: the call just runs.
    assert hook(db, at(call, 2)) == ({}, [])
    assert verdicts(db) == [("web_fetch", "allow"), ("web_fetch", "warn")]

    denied, _ = hook(db, at(call, 3))
    assert set(denied) == {"decision", "reason"}
    assert denied["decision"] == "deny"
    assert "web_fetch already ran with these arguments" in denied["reason"]

    # A replay of the denied event gets the same decision; a new prompt is a new turn.
    assert hook(db, at(call, 3))[0] == denied
    hook(db, at(gc.before_agent("and once more, please"), 4))
    assert hook(db, at(call, 5)) == ({}, [])
    assert verdicts(db)[-1] == ("web_fetch", "allow")


def test_a_failure_then_a_fix_is_learned_from_after_tool(tmp_path):
    db = tmp_path / "m.db"
    hook(db, gc.before_agent("run the tests"))
    wrong = {"command": "npm tset"}
    error = {
        "message": "Command exited with code 1: npm ERR! missing script: tset",
        "type": "execution_failed",
    }
    assert hook(db, gc.after_tool(wrong, "npm ERR! missing script: tset", error=error)) == ({}, [])
    fixed = {"command": "npm test"}
    assert hook(db, gc.after_tool(fixed, "12 passing")) == ({}, [])

    calls = rows(
        db,
        "SELECT tool, outcome, args, error_message, fixed_by IS NOT NULL, fixes IS NOT NULL FROM tool_calls",
    )
    assert [(tool, outcome, json.loads(args), message) for tool, outcome, args, message, _, _ in calls] == [
        ("run_shell_command", "failure", wrong, error["message"]),
        ("run_shell_command", "success", fixed, None),
    ]
    assert [(fixed_by, fixes) for *_, fixed_by, fixes in calls] == [(1, 0), (0, 1)]


def test_the_after_agent_reply_is_stored_once_even_when_replayed(tmp_path):
    db = tmp_path / "m.db"
    events = [
        gc.before_agent("where is the deploy script"),
        gc.after_agent("where is the deploy script", "The deploy script is deploy/run.sh."),
    ]
    for event in events + events:
        assert hook(db, event) == ({}, [])
    assert transcript(db) == [
        (gc.SESSION, "user", "where is the deploy script"),
        (gc.SESSION, "assistant", "The deploy script is deploy/run.sh."),
    ]


@pytest.mark.parametrize(
    ("case", "event"),
    [
        ("not json", b"{not json"),
        ("not an object", b"[1, 2]"),
        ("unknown event", json.dumps({**gc.before_agent("x"), "hook_event_name": "SomethingNew"}).encode()),
        (
            "claude code's event name",
            json.dumps({**gc.before_agent("x"), "hook_event_name": "PreToolUse"}).encode(),
        ),
        ("tool event without a tool", json.dumps({**gc.before_tool({}), "tool_name": None}).encode()),
    ],
)
def test_malformed_input_answers_empty_with_one_stderr_line(tmp_path, case, event):
    answer, errors = hook(tmp_path / "m.db", event)
    assert answer == {}
    assert len(errors) == 1 and errors[0].startswith("memvm hook: ")
    assert "Traceback" not in errors[0]


def test_lifecycle_events_are_answered_quietly_and_store_nothing(tmp_path):
    db = tmp_path / "m.db"
    for event in gc.lifecycle():
        assert hook(db, event) == ({}, [])
    # The same hook still captures what it is for: only the prompt after them is stored.
    hook(db, gc.before_agent("and now the real question"))
    assert transcript(db) == [(gc.SESSION, "user", "and now the real question")]


def test_model_events_are_answered_quietly_and_store_nothing(tmp_path):
    db = tmp_path / "m.db"
    for event in gc.model_events():
        assert hook(db, event) == ({}, [])
    hook(db, gc.before_agent("and now the real question"))
    assert transcript(db) == [(gc.SESSION, "user", "and now the real question")]
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]
