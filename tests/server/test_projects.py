"""An MCP server started for a project (`memvm serve --project DIR`) reads and writes the same
project memory as the hooks in DIR, beside the notes kept for every project; one started for no
project reads every project's pages, each saying where it came from."""

from pathlib import Path

import anyio
import pytest
from memvm.server.cli.main import main
from memvm.server.settings import ToolProfile

from tests.hooks import claude_code_events as cc
from tests.hooks.runner import rows, run_hook
from tests.server.conftest import call


def _work_tree(root: Path, name: str) -> Path:
    tree = root / name
    (tree / ".git").mkdir(parents=True)
    return tree


async def claude(db: str, text: str, cwd: Path, session: str) -> None:
    """A prompt through the hook's own code, on a thread: it runs its own event loop, as the
    host's process does."""
    event = {**cc.prompt(text), "cwd": str(cwd), "session_id": session}
    _, errors = await anyio.to_thread.run_sync(run_hook, "claude-code", db, event)
    assert errors == []


@pytest.mark.anyio
async def test_a_server_started_for_a_project_reads_that_projects_memory_and_the_users(
    tmp_path, migrated, connect
):
    db = migrated()
    billing, website = _work_tree(tmp_path, "billing"), _work_tree(tmp_path, "website")
    await claude(db, "billing deploys run fly deploy", billing, "s1")
    await claude(db, "website deploys run netlify deploy", website, "s2")
    await claude(db, "remember that my deploy window is Tuesday", website, "s2")

    async with connect(tools=ToolProfile.MODEL, project=str(billing.resolve())) as client:
        found = await call(client, "search_pages", query="deploy", limit=10)
        snippets = " ".join(hit["snippet"] for hit in found["results"])
        assert "fly deploy" in snippets and "Tuesday" in snippets and "netlify" not in snippets
        written = await call(client, "remember", content="billing uses stripe webhooks")
    [(project,)] = rows(db, f"SELECT project FROM pages WHERE page_id = '{written['page_id']}'")
    assert project == str(billing.resolve())

    async with connect(tools=ToolProfile.MODEL) as client:
        everything = await call(client, "search_pages", query="deploy", limit=10)
    came_from = {hit["snippet"].split()[0]: hit.get("project") for hit in everything["results"]}
    assert came_from["billing"] == str(billing.resolve()) and came_from["website"] == str(website.resolve())


def test_serve_refuses_a_project_directory_that_does_not_exist(tmp_path, capsys):
    code = main(["serve", "--db", str(tmp_path / "m.db"), "--project", str(tmp_path / "nowhere")])
    assert code != 0
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.anyio
async def test_remember_with_scope_user_keeps_a_fact_for_every_project(tmp_path, migrated, connect):
    db = migrated()
    billing, website = _work_tree(tmp_path, "billing"), _work_tree(tmp_path, "website")
    async with connect(tools=ToolProfile.MODEL, project=str(billing)) as client:
        kept = await call(client, "remember", content="my name is Ana", type="preference", scope="user")
    async with connect(tools=ToolProfile.MODEL, project=str(website)) as client:
        found = await call(client, "search_pages", query="name", limit=5)
    assert [hit["page_id"] for hit in found["results"]] == [kept["page_id"]]
    assert rows(db, f"SELECT project FROM pages WHERE page_id = '{kept['page_id']}'") == [("",)]
