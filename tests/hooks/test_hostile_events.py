"""Events built to slip past the guards or to break the hook, through the hook's own entry point;
those about the process itself (stdin, the background process) through the real `memvm hook`."""

import json
import os
import subprocess
import time
from pathlib import Path

import memvm.hooks.recall
import pytest
from memvm.engine.hosts.hook_journal import journal_path, skipped_events

from tests.commands import command
from tests.hooks import claude_code_events as cc
from tests.hooks.runner import background_pids, run_hook, run_hook_process, wait_for_background
from tests.hooks.test_hook_doctor import doctor, doctor_json


def _nested(depth: int) -> dict:
    value: dict = {"table": "users"}
    inner = value
    for _ in range(depth):
        inner["x"] = {}
        inner = inner["x"]
    return value


def test_arguments_too_deep_to_check_are_denied_not_waved_through(tmp_path):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("clean up the tables"))
    answer, _ = run_hook("claude-code", db, cc.pre_tool(_nested(40), "toolu_1", tool="mcp__db__drop_table"))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "cannot be checked" in answer["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.slow
def test_arguments_too_deep_are_denied_by_the_background_process_which_stays(tmp_path, hook_runtime):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("clean up the tables"))
    pid = wait_for_background(hook_runtime)
    event = cc.pre_tool(_nested(40), "toolu_1", tool="mcp__db__drop_table")
    answer, _ = run_hook_process("claude-code", db, event)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "cannot be checked" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    # A bad event says nothing about the database: the background process stays.
    assert background_pids(hook_runtime) == [pid]


def _nested_past_the_parser(depth: int = 1_100) -> bytes:
    return (
        '{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"mcp__x__y","tool_input":{"a":'
        + "[" * depth
        + "]" * depth
        + "}}"
    ).encode()


def test_json_nested_past_the_parser_is_skipped_and_journaled(tmp_path):
    db = tmp_path / "m.db"
    event = _nested_past_the_parser()
    answer, errors = run_hook("claude-code", db, event)
    assert answer == {} and len(errors) == 1
    [skipped] = skipped_events(db)
    assert "RecursionError" in skipped.reason and skipped.reason in errors[0]


@pytest.mark.slow
def test_json_nested_past_the_parser_is_skipped_by_the_process_and_its_background_one(tmp_path):
    db = tmp_path / "m.db"
    event = _nested_past_the_parser()
    for _ in range(2):  # in its own process, then in the background process
        answer, errors = run_hook_process("claude-code", db, event)
        assert answer == {} and len(errors) == 1
    assert len(skipped_events(db)) == 2


def test_a_session_id_with_a_lone_surrogate_is_a_session_like_any_other(tmp_path):
    db = tmp_path / "m.db"
    event = json.dumps({**cc.prompt("hello there"), "session_id": "abc\ud800"}).encode()
    assert run_hook("claude-code", db, event) == ({}, [])
    code, found = doctor_json(db)
    assert code == 0 and found["hook_sessions"][0]["session"].startswith("abc-")


@pytest.mark.slow
def test_stdin_left_open_gets_an_answer_within_seconds(tmp_path):
    db = tmp_path / "m.db"
    started = time.monotonic()
    hook = subprocess.Popen(
        command("hook", "claude-code", "--db", str(db)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert hook.stdin is not None
    hook.stdin.write(json.dumps(cc.pre_tool({"command": "ls"}, "toolu_1")).encode())
    hook.stdin.flush()  # and never closed
    out, err = _wait(hook)
    assert json.loads(out) == {}
    assert "did not end within" in err.decode()
    assert time.monotonic() - started < 60
    hook.stdin.close()


def _wait(hook: subprocess.Popen) -> tuple[bytes, bytes]:
    assert hook.stdout is not None and hook.stderr is not None
    hook.wait(timeout=60)
    return hook.stdout.read(), hook.stderr.read()


def test_doctor_counts_every_guard_that_failed_open_however_many_sessions_came_after(tmp_path):
    db = tmp_path / "m.db"
    run_hook(
        "claude-code",
        db,
        {**cc.pre_tool({"command": "ls"}, "toolu_1"), "tool_name": None, "session_id": "victim"},
    )
    for n in range(55):
        run_hook(
            "claude-code", db, {**cc.stop(f"reply {n}"), "session_id": f"later-{n}"}, "--background-idle", "0"
        )
    _, found = doctor_json(db)
    assert len(found["hook_sessions"]) == 50
    assert found["hooks_guard_failed_open"] == 1


def test_doctor_prints_a_hand_edited_journal_as_plain_lines(tmp_path):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("hello"))
    lines = [
        {"at": float("nan"), "host": "h", "session": "s", "event": "e", "guard": True, "reason": "r"},
        {"at": 1e308, "host": "h", "session": "s", "event": "e", "guard": True, "reason": "r"},
        {
            "at": time.time(),
            "host": "h",
            "session": "evil\x1b]0;title\x07\nhealthy",
            "event": "e",
            "guard": True,
            "reason": "x\ny",
        },
    ]
    journal_path(db).write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    code, text = doctor(db)
    assert code == 0 and "Traceback" not in text
    assert "\x1b" not in text
    assert "evil?]0;title??healthy" in text


@pytest.mark.slow
def test_a_changed_memvm_retires_the_background_process(tmp_path, hook_runtime):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("hello"))
    pid = wait_for_background(hook_runtime)
    source = Path(memvm.hooks.recall.__file__)
    seen = source.stat()
    # Same contents and times, as `cp -p` leaves them; the change time still moves.
    os.utime(source, ns=(seen.st_atime_ns, seen.st_mtime_ns))
    deadline = time.monotonic() + 60
    while pid in background_pids(hook_runtime) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pid not in background_pids(hook_runtime)


def test_a_secret_in_an_unknown_event_name_stays_out_of_the_log_and_the_journal(tmp_path):
    db = tmp_path / "m.db"
    key = "sk_live_" + "Ab1" * 8
    answer, errors = run_hook("claude-code", db, {**cc.prompt("x"), "hook_event_name": f"Bogus-{key}"})
    assert answer == {} and len(errors) == 1
    assert key not in errors[0] and "[REDACTED:stripe_key]" in errors[0]
    assert key not in journal_path(db).read_text()
