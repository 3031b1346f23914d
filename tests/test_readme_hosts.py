"""Each host's lines in the README attach memvm as they say: every server entry starts a `memvm
serve` that memvm's own parser takes, and each hook line installs, run as written, the entries the
hooks page shows."""

import json
import re
import shlex
from pathlib import Path

from memvm.engine.paging.projects import project_session
from memvm.server.cli.parser import parse
from memvm.server.cli.serve_start import server_settings

from tests.commands import run
from tests.hooks.test_install import PROGRAM, SHOWN_PROGRAM, as_user, documented_entries

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
SHOWN_DB = "/ABSOLUTE/PATH/TO/memvm.db"


def _label(args: list[str]) -> str:
    """An entry's session, or 'project' for one that keeps its project's memory apart."""
    return args[args.index("--session") + 1] if "--session" in args else "project"


def server_entries() -> dict[str, list[str]]:
    """The `memvm serve` arguments of every server entry the README shows, by its session."""
    found: dict[str, list[str]] = {}
    for block in re.findall(r"```json\n(.*?)```", README, re.S):
        config = json.loads(block)
        servers = config.get("mcpServers") or config.get("servers") or {}
        for entry in servers.values():
            assert entry["command"] == SHOWN_PROGRAM, entry
            found[_label(entry["args"])] = entry["args"]
    for line in README.splitlines():
        if line.startswith("claude mcp add"):
            command = shlex.split(line)
            program, *args = command[command.index("--") + 1 :]
            assert program == SHOWN_PROGRAM, line
            found[_label(args)] = args
    return found


def test_every_hosts_server_entry_is_a_serve_memvm_accepts_on_the_same_database():
    entries = server_entries()
    assert set(entries) == {"desktop", "project", "cursor", "vscode"}
    for label, args in entries.items():
        parsed = parse(args)
        assert (parsed.command, parsed.db) == ("serve", SHOWN_DB)
        assert parsed.session == label if label != "project" else parsed.project == "."


def test_the_claude_code_server_started_in_a_project_keeps_that_projects_memory(tmp_path, monkeypatch):
    repository = tmp_path / "billing"
    (repository / ".git").mkdir(parents=True)
    (repository / "src").mkdir()
    monkeypatch.chdir(repository / "src")  # where the host starts the server: its own directory
    args = server_entries()["project"]
    settings = server_settings(parse([*args[:2], str(tmp_path / "m.db"), *args[3:]]))
    assert settings.project == str(repository.resolve())
    assert settings.session == project_session(str(repository.resolve()))


def test_each_hook_line_run_as_written_installs_the_entries_the_hooks_page_shows(tmp_path):
    lines = [line for line in README.splitlines() if " hooks install " in line and not line.startswith("`")]
    assert [shlex.split(line)[3] for line in lines] == ["claude-code", "gemini-cli"]
    home, db = tmp_path / "home", tmp_path / "memvm.db"
    home.mkdir()
    for line in lines:
        program, *argv = shlex.split(line.replace(SHOWN_DB, str(db)))
        assert program == SHOWN_PROGRAM
        with as_user(tmp_path, home):
            done = run(*argv)
        assert done.status == 0, done.stderr
        host = argv[2]
        folder = {"claude-code": ".claude", "gemini-cli": ".gemini"}[host]
        written = json.loads((home / folder / "settings.json").read_text())
        expected = json.dumps(documented_entries(host)).replace(
            f"{PROGRAM} hook {host}", f"{PROGRAM} hook {host} --db {db}"
        )
        assert written == json.loads(expected)
