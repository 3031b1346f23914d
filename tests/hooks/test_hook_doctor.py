"""`memvm doctor` on what the hooks did: when capture last wrote per host session, and the events
memvm stood aside for (a pre-tool one is a guard that failed open), through the commands' own
entry point."""

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gm
from tests.hooks.runner import run_hook, run_in_process


def doctor(db: Path, *extra: str) -> tuple[int, str]:
    code, out, _ = run_in_process(["doctor", "--db", str(db), *extra])
    return code, out


def doctor_json(db: Path) -> tuple[int, dict[str, Any]]:
    code, out = doctor(db, "--json")
    return code, json.loads(out)


def test_doctor_shows_each_host_session_and_when_its_capture_last_wrote(tmp_path, report_figure):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("where is the deploy script"))
    run_hook("claude-code", db, cc.stop("It is deploy/run.sh."))
    run_hook("gemini-cli", db, {**gm.before_agent("list the files"), "session_id": "gem-1"})

    code, found = doctor_json(db)
    assert code == 0 and found["healthy"]
    sessions = {(entry["host"], entry["session"]): entry for entry in found["hook_sessions"]}
    assert set(sessions) == {("claude-code", cc.SESSION), ("gemini-cli", "gem-1")}
    claude = sessions[("claude-code", cc.SESSION)]
    assert (claude["events"], claude["last_event"], claude["skipped"]) == (2, "Stop", 0)
    assert claude["last_write_at"] is not None

    code, text = doctor(db)
    assert code == 0
    assert f"claude-code {cc.SESSION} in default: last capture " in text and "(Stop, 2 events)" in text
    assert "gemini-cli gem-1 in default: last capture " in text
    report_figure(f"hook_doctor: host_sessions={len(sessions)} captured_events={claude['events'] + 1}")


def test_a_guard_that_failed_open_is_counted_for_its_session(tmp_path, report_figure):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("make the file"))
    held = sqlite3.connect(db, isolation_level=None)
    held.execute("BEGIN EXCLUSIVE")
    try:
        answer, errors = run_hook(
            "claude-code", db, cc.pre_tool({"command": "ls"}, "toolu_1"), "--wait-ms", "200"
        )
    finally:
        held.close()
    assert answer == {} and len(errors) == 1

    code, found = doctor_json(db)
    assert code == 0, "one busy moment is not a capture that stopped"
    [entry] = found["hook_sessions"]
    assert (entry["skipped"], entry["guard_failed_open"]) == (1, 1)
    assert "busy" in entry["last_skip_reason"]
    assert found["hooks_guard_failed_open"] == 1
    assert "1 guard checks failed open" in doctor(db)[1]
    report_figure(
        f"hook_fail_open: guard_checks_failed_open={found['hooks_guard_failed_open']} counted_by_doctor=1"
    )


def test_a_capture_that_stopped_working_is_a_problem_doctor_names(tmp_path):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("first"))
    # A host that changed its events: each one is refused from now on.
    for n in range(3):
        changed = {**cc.pre_tool({"command": "ls"}, f"toolu_{n}"), "tool_name": None}
        assert run_hook("claude-code", db, changed)[0] == {}

    code, found = doctor_json(db)
    assert code == 1 and not found["healthy"]
    [problem] = found["problems"]
    assert f"hook capture for claude-code session {cc.SESSION} stopped" in problem
    assert "PreToolUse without a tool_name" in problem
    assert found["hook_sessions"][0]["guard_failed_open"] == 3


def test_the_journal_is_read_when_the_database_itself_cannot_be(tmp_path):
    db = tmp_path / "m.db"
    db.write_bytes(b"this is not a database file" * 200)
    for n in range(3):
        answer, errors = run_hook("claude-code", db, cc.pre_tool({"command": "ls"}, f"toolu_{n}"))
        assert answer == {} and len(errors) == 1

    code, found = doctor_json(db)
    assert code == 1
    [entry] = found["hook_sessions"]
    assert (entry["session"], entry["guard_failed_open"], entry["last_write_at"]) == (cc.SESSION, 3, None)
    assert any("not a usable SQLite database" in problem for problem in found["problems"])
