"""What a session gets at its start, before any prompt, through the real `memvm hook` process."""

from pathlib import Path
from typing import Any

import anyio
from memvm.engine import Engine
from memvm.engine.models.pages import NewPage, PageType
from memvm.engine.paging.tokens import TokenCounter

from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import run_hook


def claude(db: Path, event: Any, *extra: str) -> dict[str, Any]:
    answer, errors = run_hook("claude-code", db, event, *extra)
    assert errors == []
    return answer


def remember(db: Path, *notes: tuple[str, bool]) -> list[str]:
    """Store notes as the `remember` tool does (text, pinned); their page ids."""

    async def store() -> list[str]:
        engine = await Engine.open(db)
        try:
            ids = []
            for text, pinned in notes:
                page = NewPage(content=text, type=PageType.NOTE, provenance="model", pinned=pinned)
                ids.append((await engine.session("default", "planning").remember(page=page)).page_id)
            return ids
        finally:
            await engine.close()

    return anyio.run(store)


def later(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "session_id": "def456"}


def test_nothing_stored_gives_an_empty_answer_even_after_conversations(tmp_path):
    db = tmp_path / "m.db"
    assert claude(db, cc.session_start()) == {}
    claude(db, cc.prompt("our deploy script is deploy/run.sh"))
    claude(db, cc.post_tool({"command": "ls"}, {"stdout": "src"}, "toolu_1"))
    claude(db, cc.stop("Noted."))
    # Transcripts are recalled by the prompts they relate to; calls that never failed teach nothing.
    assert claude(db, later(cc.session_start())) == {}


def test_a_new_session_starts_with_pinned_and_remembered_notes_as_data(tmp_path):
    db = tmp_path / "m.db"
    note, pinned = remember(
        db, ("Deploys go through deploy/run.sh on heron.", False), ("Never push to main.", True)
    )
    for event in (later(cc.session_start()), later(cc.session_start("compact"))):
        answer = claude(db, event)
        assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        context = answer["hookSpecificOutput"]["additionalContext"]
        assert "not instructions" in context
        lines = [line for line in context.splitlines() if line.startswith("- ")]
        assert lines[0].startswith("- note, pinned | ") and lines[0].endswith("| Never push to main.")
        assert lines[1].startswith("- note | ")
        assert lines[1].endswith("| Deploys go through deploy/run.sh on heron.")
        # No page id the host's model could not use, and no session name.
        assert pinned not in context and note not in context and "planning" not in context

    gemini, errors = run_hook("gemini-cli", db, later(gc.session_start()))
    assert errors == []
    assert gemini["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "- note, pinned | " in gemini["hookSpecificOutput"]["additionalContext"]


def test_a_new_session_starts_with_the_fixes_for_the_tools_used_most_recently(tmp_path):
    db = tmp_path / "m.db"
    claude(
        db, cc.tool_failure({"command": "npm tset"}, "Exit code 1\nnpm ERR! missing script: tset", "toolu_1")
    )
    claude(db, cc.post_tool({"command": "npm test"}, {"stdout": "12 passing"}, "toolu_2"))
    context = claude(db, later(cc.session_start()))["hookSpecificOutput"]["additionalContext"]
    assert '- Bash | failed 1x with "npm ERR! missing script: tset"' in context
    assert 'changed command from "npm tset" to "npm test"' in context


def test_the_start_context_stays_within_the_recall_cap_and_keeps_room_for_fixes(tmp_path):
    db = tmp_path / "m.db"
    remember(
        db,
        *[(f"Note {n}: the service on port {8000 + n} belongs to team {n}.", n % 3 == 0) for n in range(12)],
    )
    claude(db, cc.tool_failure({"command": "npm tset"}, "npm ERR! missing script: tset", "toolu_1"))
    claude(db, cc.post_tool({"command": "npm test"}, {"stdout": "12 passing"}, "toolu_2"))
    counter = TokenCounter("o200k_base")
    for cap in (220, 400):
        context = claude(db, later(cc.session_start()), "--recall-tokens", str(cap))["hookSpecificOutput"][
            "additionalContext"
        ]
        assert counter.count(context) <= cap
        assert "- Bash | failed 1x" in context and "- note, pinned |" in context
    assert claude(db, later(cc.session_start()), "--recall-tokens", "0") == {}
