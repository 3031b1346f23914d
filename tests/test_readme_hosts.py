"""Each host's lines in the README attach memvm as they say: every server entry starts a `memvm
serve` that memvm's own parser takes, and each hook line installs, run as written, the entries the
hooks page shows."""

import json
import re
import shlex
from pathlib import Path

from memvm.server.cli import _parser as memvm_parser

from tests.commands import run
from tests.hooks.test_install import PROGRAM, SHOWN_PROGRAM, as_user, documented_entries

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
SHOWN_DB = "/ABSOLUTE/PATH/TO/memvm.db"


def server_entries() -> dict[str, list[str]]:
    """The `memvm serve` arguments of every server entry the README shows, by its session."""
    found: dict[str, list[str]] = {}
    for block in re.findall(r"```json\n(.*?)```", README, re.S):
        config = json.loads(block)
        servers = config.get("mcpServers") or config.get("servers") or {}
        for entry in servers.values():
            assert entry["command"] == SHOWN_PROGRAM, entry
            found[entry["args"][entry["args"].index("--session") + 1]] = entry["args"]
    for line in README.splitlines():
        if line.startswith("claude mcp add"):
            command = shlex.split(line)
            program, *args = command[command.index("--") + 1 :]
            assert program == SHOWN_PROGRAM, line
            found[args[args.index("--session") + 1]] = args
    return found


def test_every_hosts_server_entry_is_a_serve_memvm_accepts_on_the_same_database():
    entries = server_entries()
    assert set(entries) == {"desktop", "claude-code", "cursor", "vscode"}
    for session, args in entries.items():
        parsed = memvm_parser().parse_args(args)
        assert (parsed.command, parsed.db, parsed.session) == ("serve", SHOWN_DB, session)


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
