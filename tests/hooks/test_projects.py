"""Memory per project under the hooks: what is captured in one git work tree is recalled there and
not in another; what the user asks to remember about themselves is recalled in every project
(tests/server/test_projects.py: an MCP server started for a project reads the same memory)."""

from pathlib import Path
from typing import Any

import pytest

from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import rows, run_hook
from tests.hooks.session_players import work_tree


def _context(answer: dict[str, Any]) -> str:
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def claude(db: Path, event: dict[str, Any], cwd: Path, session: str) -> str:
    answer, errors = run_hook("claude-code", db, {**event, "cwd": str(cwd), "session_id": session})
    assert errors == []
    return _context(answer)


def test_a_prompt_in_one_repository_does_not_recall_another_repositorys_notes(tmp_path):
    db = tmp_path / "m.db"
    billing, website = work_tree(tmp_path, "billing"), work_tree(tmp_path, "website")
    claude(db, cc.prompt("the deploy runs fly deploy --app billing-prod"), billing / "src", "s1")
    claude(db, cc.stop("Noted: deploy with fly deploy --app billing-prod."), billing, "s1")

    elsewhere = claude(db, cc.prompt("how do we deploy this?"), website, "s2")
    assert "billing-prod" not in elsewhere
    here = claude(db, cc.prompt("how do we deploy this?"), billing, "s3")
    assert "billing-prod" in here
    # Stored as the project's, by its work tree, whatever subdirectory the host was in.
    projects = {project for (project,) in rows(db, "SELECT DISTINCT project FROM pages")}
    assert projects == {str(billing.resolve()), str(website.resolve())}


def test_what_the_user_asks_to_remember_about_themselves_is_recalled_in_every_project(tmp_path):
    db = tmp_path / "m.db"
    billing, website = work_tree(tmp_path, "billing"), work_tree(tmp_path, "website")
    kept = claude(db, cc.prompt("Remember that I have a beagle called Rex."), billing, "s1")
    assert "kept, for every project" in kept
    assert "beagle" not in kept  # the prompt's own words are not recalled back to it
    kept_rows = rows(
        db,
        "SELECT t.content, p.project FROM pages p JOIN page_texts t USING (rowid) WHERE p.type = 'preference'",
    )
    assert kept_rows == [("I have a beagle called Rex.", "")]

    recalled = claude(db, cc.prompt("what is my beagle called?"), website, "s2")
    assert "beagle called Rex" in recalled
    # The rest of that prompt is billing's own, as any prompt is.
    assert "Remember that I" not in recalled


@pytest.mark.parametrize(
    "prompt",
    ["remember that the API is v2", "I remember that my tests failed", "please remember to run the linter"],
)
def test_a_prompt_that_does_not_ask_to_remember_a_fact_about_the_user_keeps_nothing_for_everyone(
    tmp_path, prompt
):
    db = tmp_path / "m.db"
    claude(db, cc.prompt(prompt), work_tree(tmp_path, "billing"), "s1")
    assert rows(db, "SELECT count(*) FROM pages WHERE project = ''") == [(0,)]


def test_gemini_cli_keeps_projects_apart_by_its_events_cwd(tmp_path):
    db = tmp_path / "m.db"
    billing, website = work_tree(tmp_path, "billing"), work_tree(tmp_path, "website")

    def gemini(event: dict[str, Any], cwd: Path, session: str) -> str:
        answer, errors = run_hook("gemini-cli", db, {**event, "cwd": str(cwd), "session_id": session})
        assert errors == []
        return _context(answer)

    gemini(gc.before_agent("the billing queue is sqs-billing-7"), billing, "g1")
    assert "sqs-billing-7" not in gemini(gc.before_agent("which queue does billing use?"), website, "g2")
    assert "sqs-billing-7" in gemini(gc.before_agent("which queue does billing use?"), billing, "g3")


def test_an_event_with_no_directory_recalls_every_project_and_names_each(tmp_path):
    db = tmp_path / "m.db"
    billing = work_tree(tmp_path, "billing")
    claude(db, cc.prompt("the billing queue is sqs-billing-7"), billing, "s1")
    event = {key: value for key, value in cc.prompt("which queue does billing use?").items() if key != "cwd"}
    answer, errors = run_hook("claude-code", db, {**event, "session_id": "s2"})
    assert errors == []
    line = next(line for line in _context(answer).splitlines() if "sqs-billing-7" in line)
    assert f"from {billing.resolve()}" in line
