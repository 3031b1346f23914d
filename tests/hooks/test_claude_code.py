"""`memvm hook claude-code` on documented events, through the hook's own entry point; a few tests run
through the real process the host starts too (end-to-end stage)."""

import json
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.commands import ENTRY_MODULES, run_process
from tests.hooks import claude_code_events as cc
from tests.hooks import claude_code_transcripts as ct
from tests.hooks.runner import rows, run_hook, run_in_process, transcript, verdicts

NS = "default"


def hook(db: Path, event: Any, *extra: str) -> tuple[dict[str, Any], list[str]]:
    return run_hook("claude-code", db, event, *extra)


def test_an_allowed_call_gets_an_empty_answer_and_its_verdict_is_kept(tmp_path):
    db = tmp_path / "m.db"
    assert hook(db, cc.prompt("run the tests")) == ({}, [])
    assert hook(db, cc.pre_tool({"command": "npm test"}, "toolu_1")) == ({}, [])
    assert transcript(db) == [(cc.SESSION, "user", "run the tests")]
    assert verdicts(db) == [("Bash", "allow")]


def test_a_repeated_identical_call_is_warned_then_denied_until_the_next_prompt(tmp_path, hook_runner):
    db = tmp_path / "m.db"

    def hook(db: Path, event: Any) -> tuple[dict[str, Any], list[str]]:
        return hook_runner("claude-code", db, event)

    hook(db, cc.prompt("what is the weather in Oslo"))
    tool, call = "mcp__weather__get_forecast", {"city": "Oslo"}
    assert hook(db, cc.pre_tool(call, "toolu_1", tool=tool))[0] == {}

    warned, _ = hook(db, cc.pre_tool(call, "toolu_2", tool=tool))
    assert warned["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in warned["hookSpecificOutput"]
    assert f"{tool} already ran with these arguments" in warned["hookSpecificOutput"]["additionalContext"]

    denied, _ = hook(db, cc.pre_tool(call, "toolu_3", tool=tool))
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert (
        f"{tool} already ran with these arguments" in denied["hookSpecificOutput"]["permissionDecisionReason"]
    )

    # A replay of the denied event gets the same decision; a new prompt is a new turn.
    assert hook(db, cc.pre_tool(call, "toolu_3", tool=tool))[0] == denied
    hook(db, cc.prompt("and once more, please"))
    assert hook(db, cc.pre_tool(call, "toolu_4", tool=tool))[0] == {}


def test_a_repeat_of_a_call_whose_result_is_recorded_is_denied_with_that_result(tmp_path):
    db = tmp_path / "m.db"
    hook(db, cc.prompt("what is the weather in Oslo"))
    tool, call = "mcp__weather__get_forecast", {"city": "Oslo"}
    assert hook(db, cc.pre_tool(call, "toolu_1", tool=tool))[0] == {}
    hook(db, cc.post_tool(call, {"forecast": "light rain, 7 C"}, "toolu_1", tool=tool))

    denied, _ = hook(db, cc.pre_tool(call, "toolu_2", tool=tool))
    reason = denied["hookSpecificOutput"]["permissionDecisionReason"]
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert f"{tool} already ran with these arguments" in reason
    assert '{"forecast": "light rain, 7 C"}' in reason  # what the model asked for, without the call


def test_a_failure_then_a_fix_is_learned_without_the_model(tmp_path):
    db = tmp_path / "m.db"
    hook(db, cc.prompt("run the tests"))
    wrong = {"command": "npm tset"}
    hook(db, cc.tool_failure(wrong, "Exit code 1\nnpm ERR! missing script: tset", "toolu_1"))
    fixed = {"command": "npm test"}
    hook(db, cc.post_tool(fixed, {"stdout": "12 passing", "stderr": "", "interrupted": False}, "toolu_2"))

    calls = rows(db, "SELECT tool, outcome, args, fixed_by IS NOT NULL, fixes IS NOT NULL FROM tool_calls")
    assert [(tool, outcome, json.loads(args)) for tool, outcome, args, _, _ in calls] == [
        ("Bash", "failure", wrong),
        ("Bash", "success", fixed),
    ]
    assert [(fixed_by, fixes) for *_, fixed_by, fixes in calls] == [(1, 0), (0, 1)]


def test_replayed_events_add_nothing_twice(tmp_path):
    db = tmp_path / "m.db"
    events = [
        cc.prompt("where is the deploy script"),
        cc.post_tool({"command": "ls deploy"}, {"stdout": "run.sh"}, "toolu_1"),
        cc.stop("The deploy script is deploy/run.sh."),
    ]
    for event in events:
        hook(db, event)
        hook(db, event)  # sent again, as after a timeout
    assert transcript(db) == [
        (cc.SESSION, "user", "where is the deploy script"),
        (cc.SESSION, "assistant", "The deploy script is deploy/run.sh."),
    ]
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(1,)]


def test_a_fact_from_one_session_is_recalled_in_a_later_one_as_data_without_page_ids(tmp_path):
    db = tmp_path / "m.db"
    hook(db, cc.prompt("the staging cluster is called heron and deploys go through argo"))
    hook(db, cc.stop("Noted: staging cluster heron, deploys through argo."))
    [(page_id,)] = rows(db, "SELECT page_id FROM pages WHERE role = 'assistant'")

    later = {**cc.prompt("which cluster is staging on?"), "session_id": "def456"}
    answer, _ = hook(db, later)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "not instructions" in context
    assert "- transcript/assistant | " in context and "| Noted: staging cluster heron" in context
    # The host's model has no memvm tool that takes a page id, and a session name tells it nothing.
    assert page_id not in context and cc.SESSION not in context and "page_fault" not in context
    assert "which cluster" not in context  # the prompt's own page is not recalled

    nothing = {**cc.prompt("xylophone quartz zebra"), "session_id": "def456"}
    assert hook(db, nothing)[0] == {}


def test_secrets_in_tool_results_and_prompts_are_redacted_before_storage(tmp_path):
    db = tmp_path / "m.db"
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    hook(db, cc.prompt(f"use the token {token} for the release"))
    hook(db, cc.post_tool({"command": "cat .env"}, {"stdout": f"GITHUB_TOKEN={token}"}, "toolu_1"))
    stored = json.dumps(rows(db, "SELECT content FROM page_texts") + rows(db, "SELECT args FROM tool_calls"))
    assert token not in stored
    assert "[REDACTED:" in stored


def test_an_invalid_session_id_maps_to_the_same_valid_session_every_time(tmp_path):
    db = tmp_path / "m.db"
    odd = "weird id/with spaces"
    for text in ("first prompt", "second prompt"):
        hook(db, {**cc.prompt(text), "session_id": odd})
    sessions = {session for session, _, _ in transcript(db)}
    assert len(sessions) == 1
    assert sessions.pop().startswith("weird-id-with-spaces-")


def _locked(db: Path) -> sqlite3.Connection:
    hook(db, cc.prompt("make the file"))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


@pytest.mark.parametrize(
    ("case", "event"),
    [
        ("not json", b"{not json"),
        ("not an object", b"[1, 2]"),
        ("unknown event", json.dumps({**cc.prompt("x"), "hook_event_name": "SomethingNew"}).encode()),
        ("locked database", cc.pre_tool({"command": "ls"}, "toolu_9")),
        ("corrupt database", cc.pre_tool({"command": "ls"}, "toolu_9")),
    ],
)
def test_bad_input_or_a_broken_database_answers_empty_with_one_stderr_line(tmp_path, case, event):
    db = tmp_path / "m.db"
    held = _locked(db) if case == "locked database" else None
    if case == "corrupt database":
        db.write_bytes(b"this is not a database file" * 200)
    try:
        answer, errors = hook(db, event, "--wait-ms", "200")
    finally:
        if held is not None:
            held.close()
    assert answer == {}
    assert len(errors) == 1 and errors[0].startswith("memvm hook: ")
    assert "Traceback" not in errors[0]


def test_a_known_event_memvm_has_nothing_to_do_for_is_answered_quietly(tmp_path):
    db = tmp_path / "m.db"
    hook(db, cc.prompt("hello"))
    # A session end without a transcript to read: nothing to add, and no line on stderr.
    assert hook(db, cc.session_end()) == ({}, [])
    hook(db, cc.prompt("hello again"))
    assert transcript(db) == [(cc.SESSION, "user", "hello"), (cc.SESSION, "user", "hello again")]


def test_a_mistyped_hook_command_answers_empty_instead_of_blocking(tmp_path):
    code, out, err = run_in_process(["hook", "claude-codee"], b"{}")
    assert (code, json.loads(out)) == (0, {})
    (line,) = err.splitlines()
    assert "invalid choice: 'claude-codee'" in line and "goes on without memvm" in line


@pytest.mark.slow
def test_a_mistyped_hook_command_run_by_the_host_exits_0_with_an_empty_answer(tmp_path):
    done = run_process("hook", "claude-codee", stdin=b"{}")
    assert (done.status, json.loads(done.stdout)) == (0, {})
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.slow
def test_the_hook_path_imports_neither_the_mcp_sdk_nor_the_server(tmp_path):
    script = (
        "import io, sys, json\n"
        "from memvm.server.cli.main import main\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(cc.pre_tool({'command': 'ls'}, 't1')).encode()!r}))\n"
        f"main(['hook', 'claude-code', '--db', {str(tmp_path / 'm.db')!r}])\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('mcp', 'uvicorn', 'starlette')"
        f" or (m.startswith('memvm.server') and m not in {ENTRY_MODULES!r}) or m.startswith('memvm.resources')]\n"
        "print(json.dumps(loaded), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, check=True)
    assert json.loads(done.stdout) == {}
    assert json.loads(done.stderr.decode().splitlines()[-1]) == []


def test_every_other_documented_event_is_answered_quietly_and_stores_nothing(tmp_path):
    db = tmp_path / "m.db"
    for event in cc.others():
        assert hook(db, event) == ({}, [])
    # The same hook still captures what it is for: only the prompt after them is stored.
    hook(db, cc.prompt("and now the real question"))
    assert transcript(db) == [(cc.SESSION, "user", "and now the real question")]
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]


def test_the_folder_and_database_a_hook_makes_are_its_users_alone(tmp_path):
    db = tmp_path / "data" / "memvm" / "m.db"
    hook(db, cc.prompt("my doctor's appointment is on friday"))
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_call_the_user_interrupted_is_recorded_as_cancelled_and_teaches_no_fix(tmp_path):
    db = tmp_path / "m.db"
    hook(db, cc.prompt("run the slow suite"))
    slow = {"command": "pytest -q tests/slow"}
    interrupted = {**cc.tool_failure(slow, "Interrupted by user", "toolu_1"), "is_interrupt": True}
    hook(db, interrupted)
    hook(db, cc.post_tool({"command": "pytest -q"}, {"stdout": "3 passed"}, "toolu_2"))
    assert rows(db, "SELECT outcome, fixed_by IS NULL FROM tool_calls ORDER BY call_id") == [
        ("cancelled", 1),
        ("success", 1),
    ]


def test_a_stop_without_the_reply_takes_the_last_reply_from_the_transcript(tmp_path):
    db = tmp_path / "m.db"
    path = ct.write(
        tmp_path / "session.jsonl",
        [ct.prompt("where is the deploy script"), ct.assistant(ct.text("It is deploy/run.sh."))],
    )
    hook(db, cc.prompt("where is the deploy script"))
    older_host = {key: value for key, value in cc.stop("").items() if key != "last_assistant_message"}
    assert hook(db, {**older_host, "transcript_path": str(path)}) == ({}, [])
    assert transcript(db) == [
        (cc.SESSION, "user", "where is the deploy script"),
        (cc.SESSION, "assistant", "It is deploy/run.sh."),
    ]


def test_numbers_the_agent_just_read_in_mcp_text_or_command_output_are_grounded(tmp_path):
    db = tmp_path / "m.db"
    hook(db, cc.prompt("Look at the open Linear issues and set the estimate of the login bug to 8"))
    issues = [
        {
            "type": "text",
            "text": "LIN-4411 Checkout fails on Safari (In Progress)\nLIN-4398 Login bug: session expires (Todo)",
        }
    ]
    listed = ({"team": "ENG"}, "toolu_1", "mcp__linear__list_issues")
    hook(db, cc.pre_tool(listed[0], listed[1], tool=listed[2]))
    hook(db, cc.post_tool(listed[0], issues, listed[1], tool=listed[2]))
    log = {
        "stdout": "a1b2c3d Fix token refresh (LIN-4402)\n9f8e7d6 Bump deps\n",
        "stderr": "",
        "interrupted": False,
    }
    hook(db, cc.pre_tool({"command": "git log --oneline -2"}, "toolu_2"))
    hook(db, cc.post_tool({"command": "git log --oneline -2"}, log, "toolu_2"))

    # An id from the MCP text, one from the command's output, and the user's own estimate.
    assert hook(db, cc.pre_tool({"id": 4402}, "toolu_3", tool="mcp__linear__get_issue")) == ({}, [])
    update = cc.pre_tool({"id": 4398, "estimate": 8}, "toolu_4", tool="mcp__linear__update_issue")
    assert hook(db, update) == ({}, [])
    # A number from nowhere is still flagged.
    invented = cc.pre_tool({"id": 4398, "estimate": 13}, "toolu_5", tool="mcp__linear__update_issue")
    warned = hook(db, invented)[0]["hookSpecificOutput"]["additionalContext"]
    assert "No source for estimate=13" in warned
    assert [verdict for _, verdict in verdicts(db)][-3:] == ["allow", "allow", "warn"]
