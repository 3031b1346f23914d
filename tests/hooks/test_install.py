"""`memvm hooks install HOST`, through the command's entry point: memvm's entries merged into the host's
settings file beside everything already there."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hooks.runner import run_in_process

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"claude-code": ".claude", "gemini-cli": ".gemini"}
HOSTS = sorted(FOLDERS)


def install(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`memvm hooks install ARGS` run from `cwd` with `home` as HOME, through the command's entry point."""
    argv = ["hooks", "install", *args]
    saved_cwd, saved_home = os.getcwd(), os.environ.get("HOME")
    os.chdir(cwd)
    os.environ["HOME"] = str(home)
    try:
        code, out, err = run_in_process(argv)
    finally:
        os.chdir(saved_cwd)
        if saved_home is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = saved_home
    return subprocess.CompletedProcess(argv, code, out, err)


def readme_entries(host: str) -> dict[str, Any]:
    """The settings entries docs/hooks.md shows for the host."""
    blocks = re.findall(r"```json\n(.*?)```", (ROOT / "docs" / "hooks.md").read_text(), flags=re.S)
    [block] = [b for b in blocks if f'"command": "memvm hook {host}"' in b]
    return json.loads(block)


def ours(settings: dict[str, Any], host: str) -> list[tuple[str, str]]:
    """(event, command) of every handler that runs `memvm hook HOST`."""
    return [
        (event, handler["command"])
        for event, groups in settings["hooks"].items()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict)  # Gemini CLI's "disabled" is a list of names
        for handler in group["hooks"]
        if handler["command"].startswith(f"memvm hook {host}")
    ]


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("settings.json.*.bak"))


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "project").mkdir()
    (tmp_path / "home").mkdir()
    return tmp_path / "project", tmp_path / "home"


@pytest.mark.parametrize("host", HOSTS)
def test_install_creates_the_settings_file_and_folder_with_the_readme_entries(places, host):
    project, home = places
    done = install(project, home, host)
    assert done.returncode == 0, done.stderr
    path = project / FOLDERS[host] / "settings.json"
    assert json.loads(path.read_text()) == readme_entries(host)
    assert str(path) in done.stdout
    assert backups(path.parent) == []


@pytest.mark.parametrize("host", HOSTS)
def test_user_scope_writes_under_home(places, host):
    project, home = places
    done = install(project, home, host, "--scope", "user")
    assert done.returncode == 0, done.stderr
    assert json.loads((home / FOLDERS[host] / "settings.json").read_text()) == readme_entries(host)
    assert not (project / FOLDERS[host]).exists()


FOREIGN: dict[str, dict[str, Any]] = {
    "claude-code": {
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint-guard"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
        },
    },
    "gemini-cli": {
        "theme": "dark",
        "tools": {"enableHooks": True},
        "hooks": {
            "enabled": True,
            "disabled": ["old-hook"],
            "notifications": False,
            "BeforeTool": [
                {
                    "matcher": "run_shell_command",
                    "hooks": [{"name": "guard", "type": "command", "command": "g"}],
                }
            ],
            "SessionStart": [{"hooks": [{"name": "hello", "type": "command", "command": "echo hi"}]}],
        },
    },
}


@pytest.mark.parametrize("host", HOSTS)
def test_install_merges_beside_foreign_hooks_and_settings_and_keeps_them_all(places, host):
    project, home = places
    path = project / FOLDERS[host] / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(FOREIGN[host]))
    done = install(project, home, host)
    assert done.returncode == 0, done.stderr
    merged = json.loads(path.read_text())
    # Every foreign key and group is still there, unchanged and first in its event.
    for key, value in FOREIGN[host].items():
        if key != "hooks":
            assert merged[key] == value
    for key, value in FOREIGN[host]["hooks"].items():
        if isinstance(value, list):
            assert merged["hooks"][key][: len(value)] == value
        else:
            assert merged["hooks"][key] == value
    # memvm's groups come after them, exactly as docs/hooks.md shows.
    for event, groups in readme_entries(host)["hooks"].items():
        assert merged["hooks"][event][-1:] == groups
    assert len(ours(merged, host)) == len(readme_entries(host)["hooks"])


@pytest.mark.parametrize("host", HOSTS)
def test_a_second_install_changes_nothing_and_writes_no_backup(places, host):
    project, home = places
    path = project / FOLDERS[host] / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(FOREIGN[host]))
    assert install(project, home, host, "--db", "m.db").returncode == 0
    first = path.read_bytes()
    made = backups(path.parent)
    again = install(project, home, host, "--db", "m.db")
    assert again.returncode == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert path.read_bytes() == first
    assert backups(path.parent) == made


@pytest.mark.parametrize("host", HOSTS)
def test_changed_flags_replace_memvm_entries_and_keep_keys_the_user_added(places, host):
    project, home = places
    path = project / FOLDERS[host] / "settings.json"
    assert install(project, home, host).returncode == 0
    settings = json.loads(path.read_text())
    first_event = next(iter(settings["hooks"]))
    settings["hooks"][first_event][0]["hooks"][0]["timeout"] = 45
    path.write_text(json.dumps(settings))
    done = install(project, home, host, "--db", "sub/m.db", "--namespace", "team-a")
    assert done.returncode == 0, done.stderr
    merged = json.loads(path.read_text())
    command = f"memvm hook {host} --db {project / 'sub' / 'm.db'} --namespace team-a"
    assert ours(merged, host) == [(event, command) for event in readme_entries(host)["hooks"]]
    assert merged["hooks"][first_event][0]["hooks"][0]["timeout"] == 45


@pytest.mark.parametrize("host", HOSTS)
def test_the_previous_file_is_backed_up_under_the_name_the_output_gives(places, host):
    project, home = places
    path = project / FOLDERS[host] / "settings.json"
    path.parent.mkdir()
    original = json.dumps(FOREIGN[host], indent=4).encode()
    path.write_bytes(original)
    done = install(project, home, host)
    assert done.returncode == 0, done.stderr
    [backup] = backups(path.parent)
    assert backup.read_bytes() == original
    assert str(backup) in done.stdout


@pytest.mark.parametrize("host", HOSTS)
def test_print_shows_the_entries_and_writes_nothing(places, host):
    project, home = places
    done = install(project, home, host, "--print", "--db", "m.db", "--namespace", "n1")
    assert done.returncode == 0, done.stderr
    expected = json.loads(
        json.dumps(readme_entries(host)).replace(
            f"memvm hook {host}", f"memvm hook {host} --db {project / 'm.db'} --namespace n1"
        )
    )
    assert json.loads(done.stdout) == expected
    assert list(project.iterdir()) == []
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize(
    "content",
    ["[1, 2]", "not json {", '"text"', '{"hooks": []}', '{"hooks": {"Stop": {}, "AfterAgent": {}}}'],
)
def test_a_file_memvm_cannot_merge_into_is_refused_untouched(places, host, content):
    project, home = places
    path = project / FOLDERS[host] / "settings.json"
    path.parent.mkdir()
    path.write_text(content)
    done = install(project, home, host)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert "untouched" in done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_text() == content
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


@pytest.mark.slow
def test_hooks_install_does_not_import_the_server_or_mcp():
    code = (
        "import sys\n"
        "from memvm.hooks.entry import main\n"
        "main(['hooks', 'install', 'claude-code', '--print'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp' or m.startswith('memvm.server')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"


def test_gemini_install_says_when_hooks_disabled_names_memvm(places):
    project, home = places
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"disabled": ["memvm"]}}))
    done = install(project, home, "gemini-cli")
    assert done.returncode == 0, done.stderr
    assert 'lists "memvm"' in done.stdout
    assert json.loads(path.read_text())["hooks"]["disabled"] == ["memvm"]
