"""Catching up from the host's transcript at compaction and session end, through the real
`memvm hook` process, on transcript files written in the hosts' shapes."""

import json
import os
import secrets
import string
from pathlib import Path
from typing import Any

import pytest

from tests.hooks import claude_code_events as cc
from tests.hooks import claude_code_transcripts as ct
from tests.hooks import gemini_cli_events as gc
from tests.hooks import gemini_cli_transcripts as gt
from tests.hooks.runner import rows, run_hook, transcript, within
from tests.hooks.uncheckable import ARGUMENTS, PLACEHOLDER, with_arguments


def claude(db: Path, event: Any) -> tuple[dict[str, Any], list[str]]:
    return run_hook("claude-code", db, event)


def gemini(db: Path, event: Any) -> tuple[dict[str, Any], list[str]]:
    return run_hook("gemini-cli", db, event)


def calls(db: Path) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (tool, outcome, json.loads(args))
        for tool, outcome, args in rows(db, "SELECT tool, outcome, args FROM tool_calls ORDER BY call_id")
    ]


def _session_lines() -> list[Any]:
    """Two turns: the first seen live by the hooks, the second only in the transcript."""
    return [
        *ct.meta_lines(),
        ct.prompt("where is the deploy script"),
        ct.assistant(
            ct.thinking("look in deploy/"), ct.tool_use("toolu_1", "Bash", {"command": "ls deploy"})
        ),
        ct.tool_result("toolu_1", "run.sh"),
        ct.assistant(ct.text("The deploy script is deploy/run.sh.")),
        ct.prompt_blocks("run the tests"),
        ct.assistant(ct.text("I'll run them."), ct.tool_use("toolu_2", "Bash", {"command": "npm tset"})),
        ct.tool_result("toolu_2", [{"type": "text", "text": "npm ERR! missing script: tset"}], is_error=True),
        ct.assistant(ct.tool_use("toolu_3", "Bash", {"command": "npm test"})),
        ct.tool_result("toolu_3", "12 passing"),
        ct.assistant(ct.tool_use("toolu_4", "Bash", {"command": "npm run lint"})),  # never answered
        ct.assistant(ct.text("All 12 tests pass."), message_id="msg_final"),
    ]


def test_session_end_adds_what_the_live_events_missed_in_order(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("where is the deploy script"))
    claude(db, cc.post_tool({"command": "ls deploy"}, {"stdout": "run.sh"}, "toolu_1"))
    claude(db, cc.stop("The deploy script is deploy/run.sh."))
    path = ct.write(tmp_path / "session.jsonl", _session_lines())

    assert claude(db, cc.session_end(str(path))) == ({}, [])

    assert transcript(db) == [
        (cc.SESSION, "user", "where is the deploy script"),
        (cc.SESSION, "assistant", "The deploy script is deploy/run.sh."),
        (cc.SESSION, "user", "run the tests"),
        (cc.SESSION, "assistant", "All 12 tests pass."),
    ]
    assert calls(db) == [
        ("Bash", "success", {"command": "ls deploy"}),
        ("Bash", "failure", {"command": "npm tset"}),
        ("Bash", "success", {"command": "npm test"}),
    ]
    # The failure and the call after it are a fix, learned from the transcript alone.
    assert rows(
        db, "SELECT error_message, fixed_by IS NOT NULL FROM tool_calls WHERE outcome = 'failure'"
    ) == [("npm ERR! missing script: tset", 1)]


def test_reading_the_same_transcript_again_adds_nothing(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("yes"))
    lines = [
        ct.prompt("yes"),
        ct.assistant(ct.text("Done.")),
        ct.prompt("yes"),  # said twice, captured live once: one more copy is missing
        ct.assistant(ct.text("Done.")),
        ct.assistant(ct.tool_use("toolu_7", "Read", {"file_path": "/p/a.py"})),
        ct.tool_result("toolu_7", "def f(): ..."),
    ]
    path = ct.write(tmp_path / "session.jsonl", lines)
    for event in (cc.pre_compact(str(path)), cc.pre_compact(str(path)), cc.session_end(str(path))):
        assert claude(db, event) == ({}, [])
    # A live result of a call the transcript also shows is the same call.
    claude(db, cc.post_tool({"file_path": "/p/a.py"}, {"content": "def f(): ..."}, "toolu_7", tool="Read"))

    assert transcript(db) == [
        (cc.SESSION, "user", "yes"),
        (cc.SESSION, "assistant", "Done."),
        (cc.SESSION, "user", "yes"),
        (cc.SESSION, "assistant", "Done."),
    ]
    assert calls(db) == [("Read", "success", {"file_path": "/p/a.py"})]


def test_a_call_captured_live_is_not_added_again_from_the_transcript(tmp_path):
    db = tmp_path / "m.db"
    claude(
        db, cc.tool_failure({"command": "npm tset"}, "Exit code 1\nnpm ERR! missing script: tset", "toolu_2")
    )
    path = ct.write(
        tmp_path / "session.jsonl",
        [
            ct.assistant(ct.tool_use("toolu_2", "Bash", {"command": "npm tset"})),
            ct.tool_result("toolu_2", "Exit code 1\nnpm ERR! missing script: tset", is_error=True),
        ],
    )
    claude(db, cc.session_end(str(path)))
    assert calls(db) == [("Bash", "failure", {"command": "npm tset"})]


def _token() -> str:
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))


def test_a_secret_in_a_reply_only_the_transcript_holds_is_stored_redacted_once(tmp_path):
    db = tmp_path / "m.db"
    token = _token()
    path = ct.write(
        tmp_path / "session.jsonl",
        [ct.prompt("which token does the release use"), ct.assistant(ct.text(f"The release uses {token}."))],
    )
    for _ in range(2):
        claude(db, cc.session_end(str(path)))
    stored = rows(db, "SELECT content FROM page_texts")
    assert token not in json.dumps(stored)
    replies = [text for _, role, text in transcript(db) if role == "assistant"]
    assert len(replies) == 1 and "[REDACTED:" in replies[0]


def _huge(path: Path) -> Path:
    # Over the 16 MiB read: the lines at the start are never read, those at the end are.
    filler = json.dumps({"type": "progress", "data": {"output": "x" * 1_000}}).encode()
    with path.open("wb") as file:
        for _ in range(17 * 1024):
            file.write(filler + b"\n")
    with path.open("ab") as file:
        file.write(json.dumps(ct.prompt("the last prompt")).encode() + b"\n")
    return path


# Each broken transcript: how many stderr lines it may cost, and the prompts still captured.
_BROKEN = {
    "missing": (0, []),
    "a directory": (1, []),
    "garbled lines": (1, ["the readable prompt"]),
    "binary garbage": (1, []),
    "empty": (0, []),
    "huge": (1, ["the last prompt"]),
}


def _broken(path: Path, case: str) -> None:
    if case == "a directory":
        path.mkdir()
    elif case == "garbled lines":
        ct.write(
            path, [b"{not json", ct.prompt("the readable prompt"), b"\xff\xfe\x00", b'{"type": "user", "mess']
        )
    elif case == "binary garbage":
        path.write_bytes(bytes(range(256)) * 64)
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "huge":
        _huge(path)


def test_a_broken_transcript_never_breaks_the_host_and_what_is_readable_is_kept(tmp_path, report_figure):
    empty_answers = kept = 0
    for index, (case, (stderr_lines, captured)) in enumerate(_BROKEN.items()):
        db, path = tmp_path / f"{index}.db", tmp_path / f"{index}.jsonl"
        _broken(path, case)
        answer, errors = claude(db, cc.session_end(str(path)))
        assert answer == {}, case
        assert len(errors) == stderr_lines, (case, errors)
        assert all(line.startswith("memvm hook: ") and "Traceback" not in line for line in errors)
        assert [text for _, _, text in transcript(db)] == captured, case
        empty_answers += 1
        kept += len(captured)
    report_figure(
        f"catch_up: transcripts={len(_BROKEN)} broken={len(_BROKEN) - 1} empty_answers={empty_answers} "
        f"max_stderr_lines=1 readable_prompts_kept={kept}/2"
    )


def test_a_call_the_hook_denied_is_not_taken_from_the_transcript_as_the_tools_failure(tmp_path):
    db = tmp_path / "m.db"
    forecast, oslo = "mcp__weather__get_forecast", {"city": "Oslo"}
    claude(db, cc.prompt("what is the weather in Oslo"))
    claude(db, cc.pre_tool(oslo, "toolu_1", tool=forecast))
    claude(db, cc.post_tool(oslo, [{"type": "text", "text": "light rain"}], "toolu_1", tool=forecast))
    repeat, _ = claude(db, cc.pre_tool(oslo, "toolu_2", tool=forecast))
    surrogate = with_arguments(cc.pre_tool(PLACEHOLDER, "toolu_3", tool=forecast), ARGUMENTS[0])
    unreadable, _ = claude(db, surrogate)
    # The host shows the model each denial as the call's error result, and its transcript keeps it.
    use = ct.assistant(ct.tool_use("toolu_3", forecast, PLACEHOLDER), stop_reason="tool_use")
    path = ct.write(
        tmp_path / "session.jsonl",
        [
            ct.prompt("what is the weather in Oslo"),
            ct.assistant(ct.tool_use("toolu_1", forecast, oslo), stop_reason="tool_use"),
            ct.tool_result("toolu_1", "light rain"),
            ct.assistant(ct.tool_use("toolu_2", forecast, oslo), stop_reason="tool_use"),
            ct.tool_result(
                "toolu_2", repeat["hookSpecificOutput"]["permissionDecisionReason"], is_error=True
            ),
            with_arguments(use, ARGUMENTS[0]),
            ct.tool_result(
                "toolu_3", unreadable["hookSpecificOutput"]["permissionDecisionReason"], is_error=True
            ),
        ],
    )
    assert claude(db, cc.session_end(str(path))) == ({}, [])
    assert calls(db) == [(forecast, "success", oslo)]


def _call_with(arguments: str) -> list[Any]:
    use = ct.assistant(ct.tool_use("toolu_8", "mcp__db__drop_table", PLACEHOLDER), stop_reason="tool_use")
    return [with_arguments(use, arguments), ct.tool_result("toolu_8", "dropped")]


# Entries no write takes, and what the one stderr line says of them.
_UNSTORABLE = {
    "a call whose arguments hold a lone surrogate": (
        _call_with(ARGUMENTS[0]),
        "1 transcript entry could not be stored",
    ),
    "a call whose arguments are nested 985 deep": (
        _call_with(ARGUMENTS[1]),
        "1 transcript entry could not be stored",
    ),
    "a prompt with a lone surrogate": ([ct.prompt("x\ud800")], "1 transcript entry could not be stored"),
    "a line nested past the parser": (
        [
            b'{"type": "user", "message": {"role": "user", "content": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}}"
        ],
        "1 line(s) of the transcript cannot be read and were skipped",
    ),
}


@pytest.mark.parametrize("case", list(_UNSTORABLE))
def test_an_entry_that_cannot_be_stored_is_left_out_and_the_rest_is_captured(tmp_path, case):
    db = tmp_path / "m.db"
    lines, says = _UNSTORABLE[case]
    path = ct.write(
        tmp_path / "session.jsonl",
        [ct.prompt("before"), *lines, ct.prompt("after"), ct.assistant(ct.text("Done after."))],
    )
    for _ in range(2):  # and again, as the next compaction or session end reads it
        answer, errors = claude(db, cc.session_end(str(path)))
        assert answer == {} and errors == [f"memvm hook: {says}; what was readable is captured"]
    assert transcript(db) == [
        (cc.SESSION, "user", "before"),
        (cc.SESSION, "user", "after"),
        (cc.SESSION, "assistant", "Done after."),
    ]
    assert calls(db) == []


NOT_REGULAR = (
    "memvm hook: the transcript named by the event is not a regular file; what was readable is captured"
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a platform without FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "link to a fifo", "device"])
@pytest.mark.parametrize(
    ("host", "event", "says"),
    [
        ("claude-code", cc.session_end, [NOT_REGULAR]),
        ("claude-code", cc.pre_compact, [NOT_REGULAR]),
        # A Stop without the reply reads it from the transcript, and says nothing when it cannot.
        ("claude-code", lambda path: {**cc.stop(""), "transcript_path": path}, []),
        ("gemini-cli", gc.session_end, [NOT_REGULAR]),
    ],
    ids=["SessionEnd", "PreCompact", "Stop", "gemini-SessionEnd"],
)
def test_a_transcript_that_is_no_regular_file_is_refused_at_once(tmp_path, kind, host, event, says):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    named = {"fifo": fifo, "link to a fifo": tmp_path / "link.jsonl", "device": Path("/dev/zero")}[kind]
    if kind == "link to a fifo":
        named.symlink_to(fifo)
    db = tmp_path / "m.db"
    answered = within(30, lambda: run_hook(host, db, event(str(named))), fifo)
    assert answered == ({}, says)


def test_gemini_session_end_reads_json_lines_with_rewinds_and_skips_what_is_not_a_message(tmp_path):
    db = tmp_path / "m.db"
    gemini(db, gc.before_agent("where is the deploy script"))
    path = gt.write_jsonl(
        tmp_path / "session-2025-12-01T10-30-abc123.jsonl",
        [
            gt.user("m1", "where is the deploy script"),
            gt.gemini(
                "m2", "", tool_calls=[{"id": "c1", "name": "list_directory", "args": {}, "status": "success"}]
            ),
            gt.gemini("m3", "It is deploy/run.sh."),
            gt.updated(),
            gt.user("m4", "delete the logs"),
            gt.gemini("m5", "Deleting."),
            gt.rewind_to("m4"),  # the user took that back
            gt.info("m6", "Compressing chat history"),
            gt.user("m7", "thanks"),
            gt.gemini("m8", "You're welcome."),
        ],
    )
    for event in (gc.pre_compress(str(path)), gc.session_end(str(path))):
        assert gemini(db, event) == ({}, [])
    assert transcript(db) == [
        (gc.SESSION, "user", "where is the deploy script"),
        (gc.SESSION, "assistant", "It is deploy/run.sh."),
        (gc.SESSION, "user", "thanks"),
        (gc.SESSION, "assistant", "You're welcome."),
    ]


def test_gemini_session_end_reads_the_older_single_json_document(tmp_path):
    db = tmp_path / "m.db"
    path = gt.write_legacy(
        tmp_path / "session-2025-12-01T10-30-abc123.json",
        [gt.user("m1", "the staging cluster is heron"), gt.gemini("m2", "Noted: staging is heron.")],
    )
    assert gemini(db, gc.session_end(str(path))) == ({}, [])
    assert transcript(db) == [
        (gc.SESSION, "user", "the staging cluster is heron"),
        (gc.SESSION, "assistant", "Noted: staging is heron."),
    ]
