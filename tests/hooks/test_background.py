"""The background process that answers a database's hook events, through the real `memvm hook`
(end-to-end stage: each test starts processes)."""

import json
import os
import signal
import socket as sockets
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from memvm.engine.hosts.hook_journal import skipped_events
from memvm.hooks.runtime import endpoint

from tests.hooks import claude_code_events as cc
from tests.hooks.runner import background_pids, rows, run_hook_process, transcript, wait_for_background

pytestmark = pytest.mark.slow

CLIENT = "import sys; from memvm.server.cli.main import main; sys.exit(main())"


def _gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _sockets(runtime: Path) -> list[Path]:
    return list(runtime.glob("*.sock"))


def test_after_the_first_event_the_background_process_answers_without_the_engine_imported(
    tmp_path, hook_runtime
):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("run the tests"))
    wait_for_background(hook_runtime)
    tool, call = "mcp__weather__get_forecast", {"city": "Oslo"}
    run_hook_process("claude-code", db, cc.pre_tool(call, "toolu_1", tool=tool))
    run_hook_process("claude-code", db, cc.pre_tool(call, "toolu_2", tool=tool))

    # The third identical call, timed for its imports: the answer comes from the process that
    # holds the engine, and this one never loads it.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CLIENT, "hook", "claude-code", "--db", str(db)],
        input=json.dumps(cc.pre_tool(call, "toolu_3", tool=tool)).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    imported = done.stderr.decode()
    # The client itself is imported by name from the table of commands, which -X importtime does
    # not list; what it imports is listed, so the timing did cover the client.
    assert "memvm.hooks.runtime" in imported
    assert (
        "memvm.engine.engine" not in imported and "pydantic" not in imported and "aiosqlite" not in imported
    )


def test_with_no_background_process_every_event_is_answered_in_its_own(tmp_path, hook_runtime):
    db = tmp_path / "m.db"
    own = ("--background-idle", "0")
    run_hook_process("claude-code", db, cc.prompt("run the tests"), *own)
    tool, call = "mcp__weather__get_forecast", {"city": "Oslo"}
    decisions = [
        run_hook_process("claude-code", db, cc.pre_tool(call, f"toolu_{n}", tool=tool), *own)[0]
        for n in range(3)
    ]
    assert decisions[0] == {}
    assert "permissionDecision" not in decisions[1]["hookSpecificOutput"]
    assert decisions[2]["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert _sockets(hook_runtime) == [] and background_pids(hook_runtime) == []


def test_a_database_deleted_under_the_background_process_gets_the_next_event_in_a_new_file(
    tmp_path, hook_runtime
):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("the first file"))
    pid = wait_for_background(hook_runtime)
    for path in tmp_path.glob("m.db*"):
        path.unlink()

    run_hook_process("claude-code", db, cc.prompt("the second file"))
    assert _gone(pid), "the process holding the deleted file went on"
    # Read once the old process is gone: its end must not take the new file's WAL with it.
    assert transcript(db) == [(cc.SESSION, "user", "the second file")]


def test_the_background_process_exits_when_idle_or_when_its_socket_is_removed(tmp_path, hook_runtime):
    run_hook_process("claude-code", tmp_path / "a.db", cc.prompt("hello"), "--background-idle", "1")
    idle = wait_for_background(hook_runtime)
    assert _gone(idle), "an idle background process stayed"

    run_hook_process("claude-code", tmp_path / "b.db", cc.prompt("hello"))
    watched = wait_for_background(hook_runtime)
    for socket in _sockets(hook_runtime):
        socket.unlink()
    assert _gone(watched), "a background process whose socket was removed stayed"


def test_a_runtime_folder_others_can_enter_is_not_used(tmp_path, hook_runtime):
    hook_runtime.chmod(0o755)
    db = tmp_path / "m.db"
    # The client's own decision: no endpoint there, so no background process is asked or started.
    assert endpoint(str(db), 3_000) is None
    for text in ("first", "second"):
        assert run_hook_process("claude-code", db, cc.prompt(text)) == ({}, [])
    assert list(hook_runtime.iterdir()) == []
    assert [text for _, _, text in transcript(db)] == ["first", "second"]


def test_a_killed_background_process_is_replaced_and_no_event_is_lost(tmp_path, hook_runtime):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("first"))
    os.kill(wait_for_background(hook_runtime), signal.SIGKILL)
    assert _sockets(hook_runtime), "the killed process's socket is left behind"

    # The left socket answers nothing: the event is answered in its own process. The start of a
    # replacement is held back for a while after the last one, so that marker is aged here.
    for marker in hook_runtime.glob("*.spawned"):
        os.utime(marker, (0, 0))
    run_hook_process("claude-code", db, cc.prompt("second"))
    wait_for_background(hook_runtime)
    run_hook_process("claude-code", db, cc.prompt("third"))
    assert [text for _, _, text in transcript(db)] == ["first", "second", "third"]


def test_events_arriving_at_once_start_one_background_process_and_all_are_kept(tmp_path, hook_runtime):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("set up"), "--background-idle", "0")
    events = [cc.post_tool({"command": f"echo {n}"}, {"stdout": str(n)}, f"toolu_{n}") for n in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda event: run_hook_process("claude-code", db, event), events))
    assert all(answer == ({}, []) for answer in answers)
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(8,)]
    wait_for_background(hook_runtime)
    run_hook_process("claude-code", db, cc.post_tool({"command": "echo 8"}, {"stdout": "8"}, "toolu_8"))
    assert len(background_pids(hook_runtime)) == 1
    assert rows(db, "SELECT count(*) FROM tool_calls") == [(9,)]


def test_a_busy_database_makes_the_background_process_skip_the_event_and_stay(tmp_path, hook_runtime):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("first"))
    pid = wait_for_background(hook_runtime)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        # Same key as the running process (default --wait-ms): it waits, then answers empty.
        answer, errors = run_hook_process("claude-code", db, cc.pre_tool({"command": "ls"}, "toolu_1"))
    finally:
        conn.close()
    assert answer == {}
    assert errors == [
        "memvm hook: the database stayed busy past --wait-ms; the host goes on without memvm for this event"
    ]
    # Busy is passing: the process stays for the next event.
    assert background_pids(hook_runtime) == [pid]


def test_a_database_broken_under_the_background_process_skips_the_event_and_it_steps_down(
    tmp_path, hook_runtime
):
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("first"))
    pid = wait_for_background(hook_runtime)
    size = db.stat().st_size
    with db.open("r+b") as broken:  # the same file, overwritten in place
        broken.write(b"not a database any more " * (size // 24))
    answer, errors = run_hook_process("claude-code", db, cc.pre_tool({"command": "ls"}, "toolu_1"))
    assert answer == {} and len(errors) == 1 and errors[0].startswith("memvm hook: ")
    assert _gone(pid), "the process went on with a broken database"


def test_a_background_process_that_never_answers_costs_the_host_a_bounded_wait_and_is_journaled(
    tmp_path, hook_runtime
):
    db = tmp_path / "m.db"
    place = endpoint(db, 100)
    assert place is not None
    # Something listens where the background process would, takes the event and says nothing.
    hung = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    hung.bind(str(place.socket))
    hung.listen(1)
    try:
        started = time.monotonic()
        answer, errors = run_hook_process(
            "claude-code", db, cc.pre_tool({"command": "ls"}, "toolu_1"), "--wait-ms", "100"
        )
        waited = time.monotonic() - started
    finally:
        hung.close()
    assert answer == {}
    assert errors == [
        "memvm hook: the background process gave no answer in time; the host goes on without memvm for this event"
    ]
    assert waited < 60  # the hosts' default timeouts are 60 s (Gemini CLI) and 600 s (Claude Code)
    [skipped] = skipped_events(db)
    assert (skipped.session, skipped.event, skipped.guard) == (cc.SESSION, "PreToolUse", True)


def test_the_background_process_takes_its_database_in_its_environment_not_its_arguments(
    tmp_path, hook_runtime
):
    # Any user can list a process's arguments; a PostgreSQL URL there would show its password.
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("reading another process's arguments needs Linux's /proc")
    db = tmp_path / "secret-name.db"
    run_hook_process("claude-code", db, cc.prompt("hello"))
    pid = wait_for_background(hook_runtime)
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert not any(b"secret-name" in argument for argument in arguments)
    run_hook_process("claude-code", db, cc.prompt("and it serves that database"))
    assert [text for _, _, text in transcript(db)] == ["hello", "and it serves that database"]
