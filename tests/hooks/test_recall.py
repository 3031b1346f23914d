"""What a prompt gets back as context, through the real `memvm hook` process: the related pages
of earlier sessions and the recorded outcomes of the tools in play. What search by meaning adds is
tested in process, on an engine whose pages are embedded (as the hooks' background process's are)."""

import json
from pathlib import Path
from typing import Any

import pytest
from memvm.engine.paging.fusion import merely_near
from memvm.hooks.context import one_line
from memvm.hooks.recall import recall

from tests.conftest import NS, user
from tests.engine.meaning.test_search_by_meaning import BEAGLE
from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import rows, run_hook

# The project's own paraphrase set: its distractors are everyday notes.
PARAPHRASE = Path(__file__).parents[1] / "bench" / "data" / "paraphrase_dev.json"


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


@pytest.mark.anyio
async def test_a_prompts_context_leaves_out_pages_listed_only_for_being_near_it(engine):
    # Among many notes, a search lists pages merely near the prompt by meaning after what it
    # found; context put before the model unasked keeps only what matches or stands out.
    distractors = json.loads(PARAPHRASE.read_text(encoding="utf-8"))["distractors"][:120]
    await engine.session(NS, "earlier").ingest(messages=[user(text) for text in [BEAGLE, *distractors]])
    await engine.embed_waiting()
    later = engine.session(NS, "later")
    listed = (await later.search(query="Do I have any pets?", limit=8)).results
    near = [hit for hit in listed if merely_near(hit.matched, hit.score)]
    assert near and len(near) < len(listed)
    context = await recall(later, query="Do I have any pets?", own_pages=set(), max_tokens=4000)
    assert context is not None and "We adopted a beagle" in context
    for hit in listed:
        assert (one_line(hit.snippet) in context) is (hit not in near), hit.snippet
