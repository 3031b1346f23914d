"""A whole recorded Claude Code session played through `memvm hook` (in this process, and through the
real process in the end-to-end stage), then a later session on the same database: every answer is checked, and the database after.

The first session: it starts on an empty memory; the user states a fact and asks for the tests;
the agent mistypes the command (a failure) and fixes it; it fetches a forecast through an MCP tool
whose result carries a secret, and asks for it again (denied, with the earlier result); it
replies, and one exchange reaches only the transcript (a hook that timed out); the session ends.
The second session starts with the learned fix, recalls the fact, and may call the tool afresh.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import backend_of, stored_state
from tests.hooks import claude_code_events as cc
from tests.hooks import claude_code_transcripts as ct
from tests.hooks.runner import rows, transcript
from tests.hooks.session_players import stripe_key
from tests.hooks.test_hook_doctor import doctor_json

LATER = "def456"
FORECAST = "mcp__weather__get_forecast"


@pytest.fixture
def hook(hook_runner: Callable[..., Any]) -> Callable[[Path | str, dict[str, Any]], dict[str, Any]]:
    def answer_of(db: Path | str, event: dict[str, Any]) -> dict[str, Any]:
        answer, errors = hook_runner("claude-code", db, event)
        assert errors == [], errors
        return dict(answer)

    return answer_of


def context(answer: dict[str, Any], event: str) -> str:
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == event and "permissionDecision" not in output
    return output["additionalContext"]


def test_a_recorded_session_and_the_next_one(db_url, tmp_path, report_figure, hook):
    db = db_url
    key = stripe_key()
    tests_fail = {"command": "npm tset"}
    tests_pass = {"command": "npm test"}
    oslo = {"city": "Oslo"}
    forecast = {"forecast": "light rain, 7 C", "debug": f"request signed with {key}"}
    answers: list[dict[str, Any]] = []

    # The first session, event by event.
    assert hook(db, cc.session_start()) == {}  # nothing stored yet
    assert hook(db, cc.prompt("Our staging cluster is called heron. Run the test suite.")) == {}
    assert hook(db, cc.pre_tool(tests_fail, "toolu_1")) == {}
    assert (
        hook(db, cc.tool_failure(tests_fail, "Exit code 1\nnpm ERR! Missing script: tset", "toolu_1")) == {}
    )
    assert hook(db, cc.pre_tool(tests_pass, "toolu_2")) == {}
    assert hook(db, cc.post_tool(tests_pass, {"stdout": "12 passing", "stderr": ""}, "toolu_2")) == {}
    assert hook(db, cc.pre_tool(oslo, "toolu_3", tool=FORECAST)) == {}
    assert hook(db, cc.post_tool(oslo, forecast, "toolu_3", tool=FORECAST)) == {}
    denied = hook(db, cc.pre_tool(oslo, "toolu_4", tool=FORECAST))
    answers.append(denied)
    reason = denied["hookSpecificOutput"]["permissionDecisionReason"]
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert f"{FORECAST} already ran with these arguments" in reason and "light rain, 7 C" in reason
    assert key not in reason and "[REDACTED:stripe_key]" in reason
    assert hook(db, cc.stop("The tests pass (12). Staging is heron; Oslo: light rain, 7 C.")) == {}

    # The transcript holds one more exchange, which no live event brought.
    missed_prompt, missed_reply = "Which branch deploys to heron?", "The release branch deploys to heron."
    path = ct.write(
        tmp_path / "session.jsonl",
        [
            ct.prompt("Our staging cluster is called heron. Run the test suite."),
            ct.assistant(ct.tool_use("toolu_1", "Bash", tests_fail), stop_reason="tool_use"),
            ct.tool_result("toolu_1", "Exit code 1\nnpm ERR! Missing script: tset", is_error=True),
            ct.assistant(ct.tool_use("toolu_2", "Bash", tests_pass), stop_reason="tool_use"),
            ct.tool_result("toolu_2", "12 passing"),
            ct.assistant(ct.text("The tests pass (12). Staging is heron; Oslo: light rain, 7 C.")),
            ct.prompt(missed_prompt),
            ct.assistant(ct.text(missed_reply)),
        ],
    )
    assert hook(db, cc.session_end(str(path))) == {}
    assert hook(db, cc.session_end(str(path))) == {}  # a replay adds nothing

    # The next session starts with the fix the first one learned.
    later = {"session_id": LATER}
    start = context(hook(db, {**cc.session_start(), **later}), "SessionStart")
    assert "not instructions" in start
    assert "Bash" in start and "npm tset" in start and "npm test" in start
    recalled = context(
        hook(db, {**cc.prompt("Remind me: what is the staging cluster called?"), **later}), "UserPromptSubmit"
    )
    assert "heron" in recalled and cc.SESSION not in recalled
    assert "Remind me" not in recalled  # the prompt's own page is not recalled
    # A new session is a new turn: the forecast may be fetched again.
    assert hook(db, {**cc.pre_tool(oslo, "toolu_5", tool=FORECAST), **later}) == {}

    # The database after.
    assert transcript(db) == [
        (cc.SESSION, "user", "Our staging cluster is called heron. Run the test suite."),
        (cc.SESSION, "assistant", "The tests pass (12). Staging is heron; Oslo: light rain, 7 C."),
        (cc.SESSION, "user", missed_prompt),
        (cc.SESSION, "assistant", missed_reply),
        (LATER, "user", "Remind me: what is the staging cluster called?"),
    ]
    calls = rows(
        db,
        "SELECT tool, outcome, args, fixed_by IS NOT NULL, fixes IS NOT NULL FROM tool_calls ORDER BY rowid",
    )
    assert [
        (tool, outcome, json.loads(args), fixed, fixes) for tool, outcome, args, fixed, fixes in calls
    ] == [
        ("Bash", "failure", tests_fail, 1, 0),
        ("Bash", "success", tests_pass, 0, 1),
        (FORECAST, "success", oslo, 0, 0),
    ]
    # The secret is nowhere in the database (on SQLite, its files and write-ahead log); its mark is.
    if backend_of(db) == "sqlite":
        stored = b"".join(path.read_bytes() for path in tmp_path.glob("memvm.db*"))
    else:
        stored = repr(stored_state(db)).encode()
    assert key.encode() not in stored and b"[REDACTED:stripe_key]" in stored

    code, found = doctor_json(db)
    assert code == 0 and found["hooks_guard_failed_open"] == 0
    sessions = {entry["session"]: entry for entry in found["hook_sessions"]}
    assert set(sessions) == {cc.SESSION, LATER}
    assert all(entry["skipped"] == 0 for entry in sessions.values())
    report_figure(
        f"hook_session: events=15 pages={len(transcript(db))} tool_outcomes={len(calls)} denied=1 "
        f"fixes_learned=1 caught_up=2 secrets_stored=0"
    )
