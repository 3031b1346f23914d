"""Events built to slip past the guards or to break the hook, through the hook's own entry point;
those about the process itself (stdin, the background process) through the real `memvm hook`."""

import json
import subprocess
import time

import pytest
from memvm.engine.hosts.hook_journal import journal_path, skipped_events
from memvm.engine.paging.tokens import TokenCounter

from tests.commands import command
from tests.conftest import fresh_postgres_database
from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import (
    background_pids,
    rows,
    run_hook,
    run_hook_process,
    run_in_process,
    transcript,
    wait_for_background,
)
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


def _huge_number_call() -> bytes:
    call = json.dumps(cc.pre_tool({"amount": 1, "to": "acct-7"}, "toolu_9", tool="mcp__pay__send"))
    return call.replace('"amount": 1', '"amount": ' + "9" * 4_400).encode()


def _nested_call(depth: int = 985) -> bytes:
    """A call nested just short of the parser's limit, written by hand: json.dumps itself stops sooner."""
    inner = '{"x": ' * depth + '{"table": "users"}' + "}" * depth
    return (
        json.dumps(cc.pre_tool({}, "toolu_8", tool="mcp__db__drop_table"))
        .replace('"tool_input": {}', f'"tool_input": {inner}')
        .encode()
    )


def _surrogate_call() -> bytes:
    return json.dumps(cc.pre_tool({"memo": "x\ud800"}, "toolu_7", tool="mcp__pay__send")).encode()


@pytest.mark.parametrize(
    ("event", "says"),
    [
        (_nested_past_the_parser, "nested too deep to read"),
        (_nested_call, "nested too deep"),
        (_huge_number_call, "a number of thousands of digits"),
        (_surrogate_call, "not valid Unicode"),
    ],
    ids=["past-the-parser", "past-the-guards", "huge-integer", "lone-surrogate"],
)
def test_a_call_whose_arguments_cannot_be_checked_is_denied_not_waved_through(tmp_path, event, says):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("pay the invoice"))
    answer, errors = run_hook("claude-code", db, event())
    decision = answer["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and errors == []
    assert (
        says in decision["permissionDecisionReason"]
        and "cannot be checked" in decision["permissionDecisionReason"]
    )
    # Denied is decided: no guard failed open, for the journal or for doctor.
    assert skipped_events(db) == []
    assert doctor_json(db)[1]["hooks_guard_failed_open"] == 0


def test_gemini_cli_denies_an_uncheckable_call_in_its_own_words(tmp_path):
    call = json.dumps(gc.before_tool({"amount": 1}, tool="pay")).replace(
        '"amount": 1', '"amount": ' + "9" * 4_400
    )
    answer, _ = run_hook("gemini-cli", tmp_path / "m.db", call.encode())
    assert answer["decision"] == "deny" and "cannot be checked" in answer["reason"]


def test_an_unreadable_event_that_is_no_tool_call_still_lets_the_host_go_on(tmp_path):
    db = tmp_path / "m.db"
    prompt = json.dumps(cc.prompt("hello")).replace('"hello"', '"hello", "n": ' + "9" * 4_400)
    answer, errors = run_hook("claude-code", db, prompt.encode())
    assert answer == {} and len(errors) == 1
    [skipped] = skipped_events(db)
    assert skipped.guard is False  # stood aside for, and counted as no guard that failed open


@pytest.mark.slow
def test_json_nested_past_the_parser_is_denied_by_the_process_and_its_background_one(tmp_path):
    db = tmp_path / "m.db"
    event = _nested_past_the_parser()
    for _ in range(2):  # in its own process, then in the background process
        answer, errors = run_hook_process("claude-code", db, event)
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny" and errors == []
    assert skipped_events(db) == []


def test_a_20_mb_prompt_is_refused_by_its_length_at_once_in_one_line(tmp_path, monkeypatch):
    counted: list[int] = []
    encoded = TokenCounter._encoded
    monkeypatch.setattr(
        TokenCounter, "_encoded", lambda self, text: counted.append(len(text)) or encoded(self, text)
    )
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("hello"))
    prompt = "please summarise this log line. " * 625_000  # 20,000,000 characters
    started = time.perf_counter()
    answer, errors = run_hook("claude-code", db, cc.prompt(prompt))
    elapsed = time.perf_counter() - started
    assert answer == {}
    assert errors == [
        "memvm hook: the event's text is 20000000 characters, over the 6400000-character page limit "
        "(max_page_tokens), so it was not stored; the host goes on without memvm for this event"
    ]
    assert [length for length in counted if length >= len(prompt)] == []  # never tokenised
    assert elapsed < 30  # a sanity bound for a busy machine: it takes about a second
    [skipped] = skipped_events(db)
    assert (skipped.event, skipped.guard) == ("UserPromptSubmit", False)
    assert [text for _, _, text in transcript(db)] == ["hello"]


def test_a_session_id_with_a_lone_surrogate_is_a_session_like_any_other(tmp_path):
    db = tmp_path / "m.db"
    event = json.dumps({**cc.prompt("hello there"), "session_id": "abc\ud800"}).encode()
    assert run_hook("claude-code", db, event) == ({}, [])
    code, found = doctor_json(db)
    assert code == 0 and found["hook_sessions"][0]["session"].startswith("abc-")


HOSTILE_IDS = [
    "trail\n",
    "a/b/../../c",
    "x" * 10_000,
    "nul\x00id",
    "emoji-\U0001f600",
    "..",
    "../../etc",
    "-",
]


def _session_of_every_kind(session_id: str) -> list[tuple[str, dict]]:
    tool = "mcp__shop__" + "x" * 300 + "\n"  # past a tool name's 128 characters, and a newline
    result = "a long result " * 400  # long enough to become a page whose provenance names the tool
    return [
        ("claude-code", {**cc.prompt("book a table for 4"), "session_id": session_id}),
        ("claude-code", {**cc.pre_tool({"party": 4}, "toolu_1", tool=tool), "session_id": session_id}),
        (
            "claude-code",
            {**cc.post_tool({"party": 4}, result, "toolu_1", tool=tool), "session_id": session_id},
        ),
        ("claude-code", {**cc.stop("booked"), "session_id": session_id}),
        ("gemini-cli", {**gc.before_agent("list the files"), "session_id": session_id}),
        ("gemini-cli", {**gc.before_tool({"command": "ls"}), "session_id": session_id}),
        ("gemini-cli", {**gc.after_tool({"command": "ls"}, result, tool=tool), "session_id": session_id}),
    ]


def test_hostile_session_ids_leave_the_file_healthy_and_restorable(db_url, tmp_path, request):
    for session_id in HOSTILE_IDS:
        for host, event in _session_of_every_kind(session_id):
            _, errors = run_hook(host, db_url, event)
            assert errors == [], (session_id[:20], event["hook_event_name"])
    code, out, _ = run_in_process(["doctor", "--db", db_url])
    assert code == 0 and "healthy" in out
    # No two ids share a session, and every name is one a restore takes.
    sessions = [session for (session,) in rows(db_url, "SELECT session FROM sessions")]
    assert len(sessions) >= len(HOSTILE_IDS)
    assert all(len(name) <= 64 and name[0].isalnum() and name.isascii() for name in sessions)
    export = tmp_path / "all.jsonl"
    assert run_in_process(["export", "--db", db_url, "--out", str(export)])[0] == 0
    fresh = str(tmp_path / "fresh.db")
    if db_url.startswith("postgresql"):
        fresh = fresh_postgres_database(request.getfixturevalue("postgres"))
    code, _, err = run_in_process(["import", str(export), "--db", fresh])
    assert code == 0, err
    assert rows(fresh, "SELECT count(*) FROM pages") == rows(db_url, "SELECT count(*) FROM pages")


def test_the_same_hostile_id_is_the_same_session_every_time(tmp_path):
    db = tmp_path / "m.db"
    for text in ("first prompt", "second prompt"):
        run_hook("claude-code", db, {**cc.prompt(text), "session_id": "trail\n"})
    [(session, pages)] = rows(db, "SELECT session, count(*) FROM pages GROUP BY session")
    assert pages == 2 and session.startswith("trail-") and session != "trail\n"


def test_a_namespace_no_server_could_serve_is_refused_in_one_line_and_nothing_is_written(tmp_path):
    db = tmp_path / "m.db"
    for namespace in ("../../etc", "work\n", "", "a" * 65):
        answer, errors = run_hook("claude-code", db, cc.prompt("hello"), "--namespace", namespace)
        assert answer == {} and len(errors) == 1
        assert "--namespace" in errors[0] and "not a namespace name" in errors[0]
    assert not db.exists()


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
def test_a_changed_memvm_retires_the_background_process(tmp_path, hook_runtime, monkeypatch):
    # A package folder of this test's own processes: installing into it changes their memvm,
    # where changing the real sources would retire every other test's background process too.
    packages = tmp_path / "site-packages"
    packages.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(packages))
    db = tmp_path / "m.db"
    run_hook_process("claude-code", db, cc.prompt("hello"))
    pid = wait_for_background(hook_runtime)
    (packages / "upgraded.py").write_text("")
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
