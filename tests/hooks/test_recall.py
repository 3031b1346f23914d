"""What a prompt gets back as context, through the real `memvm hook` process: the related pages
of earlier sessions and the recorded outcomes of the tools in play."""

from pathlib import Path
from typing import Any

from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import rows, run_hook


def claude(db: Path, event: Any, *extra: str) -> dict[str, Any]:
    answer, errors = run_hook("claude-code", db, event, *extra)
    assert errors == []
    return answer


def in_session(event: dict[str, Any], session: str) -> dict[str, Any]:
    return {**event, "session_id": session}


def _failure_then_fix(db: Path) -> None:
    claude(db, cc.prompt("run the tests"))
    claude(
        db, cc.tool_failure({"command": "npm tset"}, "Exit code 1\nnpm ERR! missing script: tset", "toolu_1")
    )
    claude(db, cc.post_tool({"command": "npm test"}, {"stdout": "12 passing"}, "toolu_2"))


_HINT = '- Bash | failed 1x with "npm ERR! missing script: tset"'
_FIX = 'changed command from "npm tset" to "npm test"'


def test_a_later_session_gets_the_fact_and_the_fix_learned_in_an_earlier_one(tmp_path):
    db = tmp_path / "m.db"
    claude(db, cc.prompt("our deploy script is deploy/run.sh"))
    claude(db, cc.stop("Noted: deploys run deploy/run.sh."))
    _failure_then_fix(db)
    [(reply_id,)] = rows(db, "SELECT page_id FROM pages WHERE role = 'assistant'")

    answer = claude(
        db, in_session(cc.prompt("how do I deploy? and why did Bash fail on the tests"), "def456")
    )
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "not instructions" in context
    assert "- transcript/assistant | " in context and reply_id not in context
    hint = next(line for line in context.splitlines() if line.startswith("- Bash |"))
    assert hint.startswith(_HINT) and _FIX in hint


def test_the_tools_this_session_used_bring_their_hints_unnamed(tmp_path):
    db = tmp_path / "m.db"
    _failure_then_fix(db)
    later = "def456"
    claude(db, in_session(cc.post_tool({"command": "ls"}, {"stdout": "src"}, "toolu_9"), later))
    answer = claude(db, in_session(cc.prompt("what next"), later))
    assert _FIX in answer["hookSpecificOutput"]["additionalContext"]
    # A tool neither named nor used in the session brings nothing.
    assert claude(db, in_session(cc.prompt("xylophone quartz zebra"), "ghi789")) == {}


def test_another_namespace_or_an_empty_database_gets_no_hints(tmp_path):
    db = tmp_path / "m.db"
    _failure_then_fix(db)
    question = in_session(cc.prompt("why did Bash fail"), "def456")
    assert claude(db, question, "--namespace", "other") == {}
    assert claude(tmp_path / "empty.db", question) == {}


def test_gemini_cli_prompt_gets_the_fix_for_the_tool_it_names(tmp_path):
    db = tmp_path / "m.db"
    run_hook("gemini-cli", db, gc.before_agent("run the tests"))
    error = {
        "message": "Command exited with code 1: npm ERR! missing script: tset",
        "type": "execution_failed",
    }
    run_hook("gemini-cli", db, gc.after_tool({"command": "npm tset"}, "npm ERR!", error=error))
    run_hook("gemini-cli", db, gc.after_tool({"command": "npm test"}, "12 passing"))
    later = {**gc.before_agent("does run_shell_command work for the tests?"), "session_id": "def456"}
    answer, errors = run_hook("gemini-cli", db, later)
    assert errors == []
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "- run_shell_command | failed 1x" in context and _FIX in context
