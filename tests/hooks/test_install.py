"""`memvm hooks install|uninstall HOST`, through the command's entry point: memvm's entries merged
into the host's settings file beside everything already there, and taken out again exactly."""

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.commands import ENTRY_MODULES, Done, run
from tests.conftest import db_rows
from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import within

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"claude-code": ".claude", "gemini-cli": ".gemini"}
HOSTS = sorted(FOLDERS)
# The memvm script the install names: the one beside this interpreter, as for any installed memvm.
PROGRAM = str(Path(sys.executable).with_name("memvm"))
# How docs/hooks.md writes it.
SHOWN_PROGRAM = "/ABSOLUTE/PATH/TO/memvm/.venv/bin/memvm"


@contextmanager
def as_user(cwd: Path, home: Path) -> Iterator[None]:
    """This process in `cwd`, with `home` as the user's home and data folder."""
    saved_cwd = os.getcwd()
    saved = {name: os.environ.get(name) for name in ("HOME", "XDG_DATA_HOME")}
    os.chdir(cwd)
    os.environ["HOME"] = str(home)
    os.environ["XDG_DATA_HOME"] = str(home / ".local" / "share")
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def hooks(cwd: Path, home: Path, *args: str) -> Done:
    """`memvm hooks ARGS` run from `cwd` with `home` as HOME."""
    with as_user(cwd, home):
        return run("hooks", *args)


def install(cwd: Path, home: Path, *args: str) -> Done:
    return hooks(cwd, home, "install", *args)


def uninstall(cwd: Path, home: Path, *args: str) -> Done:
    return hooks(cwd, home, "uninstall", *args)


def refused(done: Done) -> str:
    """The one stderr line of a refusal: exit 2, nothing on stdout, no traceback."""
    assert (done.status, done.stdout) == (2, ""), done
    (line,) = done.stderr.splitlines()
    assert line.startswith("memvm hooks ") and line.endswith("nothing was written"), line
    return line


def documented_entries(host: str, program: str = PROGRAM) -> dict[str, Any]:
    """The settings entries docs/hooks.md shows for the host, naming `program`."""
    blocks = re.findall(r"```json\n(.*?)```", (ROOT / "docs" / "hooks.md").read_text(), flags=re.S)
    [block] = [b for b in blocks if f'"command": "{SHOWN_PROGRAM} hook {host}' in b]
    return json.loads(block.replace(SHOWN_PROGRAM, program))


def ours(settings: dict[str, Any], host: str) -> list[tuple[str, str]]:
    """(event, command) of every handler that runs `memvm hook HOST`."""
    return [
        (event, handler["command"])
        for event, groups in settings["hooks"].items()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict)  # Gemini CLI's "disabled" is a list of names
        for handler in group["hooks"]
        if f"memvm hook {host}" in handler["command"]
    ]


def backups(home: Path) -> list[Path]:
    return sorted((home / ".local" / "share" / "memvm" / "settings-backups").glob("*.bak"))


def personal_file(host: str, project: Path, home: Path) -> Path:
    """Where an install with no --scope writes: yours alone, never committed."""
    if host == "claude-code":
        return project / ".claude" / "settings.local.json"
    return home / ".gemini" / "settings.json"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "project").mkdir()
    (tmp_path / "home").mkdir()
    return tmp_path / "project", tmp_path / "home"


@pytest.mark.parametrize("host", HOSTS)
def test_install_writes_the_documented_entries_naming_this_memvm_in_the_hosts_personal_file(places, host):
    project, home = places
    done = install(project, home, host)
    assert done.status == 0, done.stderr
    path = personal_file(host, project, home)
    assert json.loads(path.read_text()) == documented_entries(host)
    assert str(path) in done.stdout
    assert not (project / FOLDERS[host] / "settings.json").exists()  # the shared file stays as it was
    assert backups(home) == []
    # The program is named by its absolute path: the host's shell needs no PATH of the virtualenv.
    for _, command in ours(json.loads(path.read_text()), host):
        assert os.path.isabs(shlex.split(command)[0]) and os.access(shlex.split(command)[0], os.X_OK)


@pytest.mark.parametrize("host", HOSTS)
def test_user_scope_writes_under_home(places, host):
    project, home = places
    done = install(project, home, host, "--scope", "user")
    assert done.status == 0, done.stderr
    assert json.loads((home / FOLDERS[host] / "settings.json").read_text()) == documented_entries(host)
    assert not (project / FOLDERS[host]).exists()


@pytest.mark.parametrize("host", HOSTS)
def test_project_scope_writes_no_personal_path_and_says_what_each_teammate_needs(places, host):
    project, home = places
    done = install(project, home, host, "--scope", "project", "--namespace", "team-a")
    assert done.status == 0, done.stderr
    settings = json.loads((project / FOLDERS[host] / "settings.json").read_text())
    assert {command for _, command in ours(settings, host)} == {f"memvm hook {host} --namespace team-a"}
    assert str(home) not in json.dumps(settings) and PROGRAM not in json.dumps(settings)
    assert "each teammate needs memvm on the PATH" in done.stdout

    refusal = install(project, home, host, "--scope", "project", "--db", str(home / "m.db"))
    assert "names no path of yours" in refused(refusal)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("namespace", ["team\n", "../../etc", "my team"])
def test_a_namespace_no_hook_could_use_is_refused_and_nothing_is_written(places, host, namespace):
    project, home = places
    assert "--namespace takes" in refused(install(project, home, host, "--namespace", namespace))
    assert list(project.iterdir()) == [] and list(home.iterdir()) == []


def test_gemini_cli_has_no_local_scope_and_says_which_to_use(places):
    project, home = places
    line = refused(install(project, home, "gemini-cli", "--scope", "local"))
    assert "--scope user" in line and "--scope project" in line
    assert list(project.iterdir()) == [] and list(home.iterdir()) == []


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


def with_foreign_settings(host: str, project: Path, home: Path, **dumps: Any) -> Path:
    path = personal_file(host, project, home)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(FOREIGN[host], **dumps))
    return path


@pytest.mark.parametrize("host", HOSTS)
def test_install_merges_beside_foreign_hooks_and_settings_and_keeps_them_all(places, host):
    project, home = places
    path = with_foreign_settings(host, project, home)
    done = install(project, home, host)
    assert done.status == 0, done.stderr
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
    for event, groups in documented_entries(host)["hooks"].items():
        assert merged["hooks"][event][-1:] == groups
    assert len(ours(merged, host)) == len(documented_entries(host)["hooks"])


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_takes_out_exactly_memvms_entries(places, host):
    project, home = places
    path = with_foreign_settings(host, project, home)
    assert install(project, home, host, "--db", "m.db").status == 0
    done = uninstall(project, home, host)
    assert done.status == 0, done.stderr
    assert json.loads(path.read_text()) == FOREIGN[host]
    assert f"took memvm's hooks for {host} out of {path}" in done.stdout

    again = uninstall(project, home, host)
    assert again.status == 0 and "nothing changed" in again.stdout
    assert json.loads(path.read_text()) == FOREIGN[host]


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_of_a_file_memvm_alone_wrote_leaves_no_hooks_and_other_scopes_alone(places, host):
    project, home = places
    assert install(project, home, host, "--scope", "project").status == 0
    assert install(project, home, host).status == 0
    assert uninstall(project, home, host).status == 0
    assert json.loads(personal_file(host, project, home).read_text()) == {}
    shared = json.loads((project / FOLDERS[host] / "settings.json").read_text())
    assert len(ours(shared, host)) == len(documented_entries(host)["hooks"])
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir()
    missing = uninstall(elsewhere, home, host, "--scope", "project")
    assert missing.status == 0 and "nothing changed" in missing.stdout
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("host", HOSTS)
def test_a_second_install_changes_nothing_and_writes_no_backup(places, host):
    project, home = places
    path = with_foreign_settings(host, project, home)
    assert install(project, home, host, "--db", "m.db").status == 0
    first = path.read_bytes()
    made = backups(home)
    again = install(project, home, host, "--db", "m.db")
    assert again.status == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert path.read_bytes() == first
    assert backups(home) == made


@pytest.mark.parametrize("host", HOSTS)
def test_changed_flags_replace_memvm_entries_and_keep_keys_the_user_added(places, host):
    project, home = places
    path = personal_file(host, project, home)
    assert install(project, home, host).status == 0
    settings = json.loads(path.read_text())
    first_event = next(iter(settings["hooks"]))
    settings["hooks"][first_event][0]["hooks"][0]["timeout"] = 45
    path.write_text(json.dumps(settings))
    done = install(project, home, host, "--db", "sub/m.db", "--namespace", "team-a")
    assert done.status == 0, done.stderr
    merged = json.loads(path.read_text())
    command = shlex.join(
        [PROGRAM, "hook", host, "--db", str(project / "sub" / "m.db"), "--namespace", "team-a"]
    )
    assert ours(merged, host) == [(event, command) for event in documented_entries(host)["hooks"]]
    assert merged["hooks"][first_event][0]["hooks"][0]["timeout"] == 45


@pytest.mark.parametrize("host", HOSTS)
def test_the_previous_file_is_backed_up_in_memvms_data_folder_under_the_name_the_output_gives(places, host):
    project, home = places
    path = with_foreign_settings(host, project, home, indent=4)
    original = path.read_bytes()
    done = install(project, home, host)
    assert done.status == 0, done.stderr
    [backup] = backups(home)
    assert backup.read_bytes() == original
    assert str(backup) in done.stdout
    # Nothing beside the settings file a host would read or a commit would take.
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.parametrize("host", HOSTS)
def test_print_shows_the_entries_and_writes_nothing(places, host):
    project, home = places
    done = install(project, home, host, "--print", "--db", "m.db", "--namespace", "n1")
    assert done.status == 0, done.stderr
    expected = json.loads(
        json.dumps(documented_entries(host)).replace(
            f"{PROGRAM} hook {host}", f"{PROGRAM} hook {host} --db {project / 'm.db'} --namespace n1"
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
@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_file_memvm_cannot_merge_into_is_refused_untouched(places, host, content, command):
    project, home = places
    path = personal_file(host, project, home)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    done = hooks(project, home, command, host)
    if command == "uninstall" and content == '{"hooks": {"Stop": {}, "AfterAgent": {}}}':
        assert done.status == 0 and "nothing changed" in done.stdout  # nothing of memvm's to take out
    else:
        assert done.status == 2
        (line,) = done.stderr.splitlines()
        assert "untouched" in line and "Traceback" not in done.stderr
    assert path.read_text() == content
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.slow
@pytest.mark.parametrize("host", HOSTS)
def test_the_installed_command_runs_from_a_shell_without_the_virtualenv_on_path(places, host):
    project, home = places
    db = project / "m.db"
    assert install(project, home, host, "--db", str(db)).status == 0
    [command] = {
        command for _, command in ours(json.loads(personal_file(host, project, home).read_text()), host)
    }
    prompt = (
        cc.prompt("the deploy key rotates on mondays")
        if host == "claude-code"
        else gc.before_agent("the deploy key rotates on mondays")
    )
    # As a host runs it: a shell with the system's PATH only, in the project.
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(prompt).encode(),
        capture_output=True,
        cwd=project,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "MEMVM_RUNTIME_DIR": os.environ["MEMVM_RUNTIME_DIR"],
        },
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {} and done.stderr == b""
    assert db_rows(db, "SELECT role FROM pages WHERE type = 'transcript'") == [("user",)]


@pytest.mark.slow
def test_hooks_install_does_not_import_the_server_or_mcp():
    code = (
        "import sys\n"
        "from memvm.server.cli.main import main\n"
        "main(['hooks', 'install', 'claude-code', '--print'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'"
        f" or (m.startswith('memvm.server') and m not in {ENTRY_MODULES!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"


def test_gemini_install_says_when_hooks_disabled_names_memvm(places):
    project, home = places
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"disabled": ["memvm"]}}))
    done = install(project, home, "gemini-cli")
    assert done.status == 0, done.stderr
    assert 'lists "memvm"' in done.stdout
    assert json.loads(path.read_text())["hooks"]["disabled"] == ["memvm"]


@pytest.mark.parametrize("host", HOSTS)
def test_a_linked_settings_file_is_written_through_and_stays_a_link(places, host):
    # As a dotfile manager leaves it: the settings file is a link into the user's dotfiles.
    project, home = places
    kept = home / "dotfiles" / "settings.json"
    kept.parent.mkdir()
    kept.write_text(json.dumps(FOREIGN[host]))
    path = personal_file(host, project, home)
    path.parent.mkdir(parents=True)
    path.symlink_to(kept)

    done = install(project, home, host)
    assert done.status == 0, done.stderr
    assert f"written through to {kept}" in done.stdout
    assert path.is_symlink() and path.resolve() == kept
    merged = json.loads(kept.read_text())
    assert merged["hooks"] == json.loads(json.dumps(merged["hooks"])) and ours(merged, host)
    assert {key: merged[key] for key in FOREIGN[host] if key != "hooks"} == {
        key: value for key, value in FOREIGN[host].items() if key != "hooks"
    }

    done = uninstall(project, home, host)
    assert done.status == 0, done.stderr
    assert path.is_symlink() and json.loads(kept.read_text()) == FOREIGN[host]
    assert [p.name for p in kept.parent.iterdir()] == ["settings.json"]  # no temporary file left


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_link_that_leads_nowhere_is_refused_in_one_line_and_nothing_is_created(places, host, command):
    project, home = places
    path = personal_file(host, project, home)
    path.parent.mkdir(parents=True)
    path.symlink_to(home / "dotfiles" / "settings.json")
    done = hooks(project, home, command, host)
    assert done.status == 2 and "leads to no file" in refused_untouched(done)
    assert not (home / "dotfiles").exists() and path.is_symlink()
    assert backups(home) == []


def refused_untouched(done: Done) -> str:
    (line,) = done.stderr.splitlines()
    assert "untouched" in line and "Traceback" not in done.stderr
    return line


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("depth", [70, 5_000])
def test_a_settings_file_nested_past_any_host_s_is_refused_in_one_line_and_left_as_it_is(places, host, depth):
    project, home = places
    path = personal_file(host, project, home)
    path.parent.mkdir(parents=True)
    content = '{"deep": ' + "[" * depth + "]" * depth + "}"
    path.write_text(content)
    for command in ("install", "uninstall"):
        done = hooks(project, home, command, host)
        assert done.status == 2 and "nested deeper than" in refused_untouched(done)
    assert path.read_text() == content and backups(home) == []


NUMBERS = (
    '{"big": 1e400, "tiny": 1e-400, "precise": 0.10000000000000001, "exponent": 1E2, "zero": -0, "long": '
)


def _compact(text: str) -> str:
    return re.sub(r"\s", "", text)


@pytest.mark.parametrize("host", HOSTS)
def test_numbers_are_written_back_as_they_were_written(places, host):
    project, home = places
    path = personal_file(host, project, home)
    path.parent.mkdir(parents=True)
    numbers = NUMBERS + "9" * 5_000 + "}"  # past Python's 4,300 digits of int()
    original = '{"model": "opus", "numbers": ' + numbers + "}"
    path.write_text(original)

    assert install(project, home, host).status == 0
    written = path.read_text()
    assert "Infinity" not in written and ours(json.loads(written, parse_int=str), host)
    assert _compact(numbers) in _compact(written)

    assert uninstall(project, home, host).status == 0
    assert _compact(path.read_text()) == _compact(original)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_file_holding_what_json_has_no_number_for_is_refused(places, host, constant):
    project, home = places
    path = personal_file(host, project, home)
    path.parent.mkdir(parents=True)
    path.write_text(f'{{"x": {constant}}}')
    assert "is no JSON number" in refused_untouched(install(project, home, host))
    assert path.read_text() == f'{{"x": {constant}}}'


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a platform without FIFOs")
def test_a_fifo_where_the_settings_file_is_is_refused_without_waiting(places):
    project, home = places
    path = personal_file("claude-code", project, home)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    done = within(30, lambda: install(project, home, "claude-code"), path)
    assert done is not None and "not a regular file" in refused_untouched(done)
