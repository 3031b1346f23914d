"""memvm's entries in a host's settings file: what they are, where the file lives, and how they
are merged into whatever the file already holds.

The merge touches only memvm's own handlers (known by their command, `memvm hook HOST ...`), so
other hooks, other settings and keys inside `hooks` that are not events (Gemini CLI's `enabled`,
`disabled`, `notifications`) stay as they were, and merging twice gives the same file.
"""

import copy
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from memvm.hooks.events import Host


class Scope(StrEnum):
    LOCAL = "local"  # this project, this person: Claude Code's .claude/settings.local.json
    PROJECT = "project"  # this project, the whole team: committed with it
    USER = "user"  # every project, this person: under $HOME


# Where a host keeps a personal setup when no scope is named: Claude Code has a per-project file
# that is never committed; Gemini CLI's only personal file is the user's.
DEFAULT_SCOPES: dict[Host, Scope] = {Host.CLAUDE_CODE: Scope.LOCAL, Host.GEMINI_CLI: Scope.USER}


class SettingsRefused(Exception):
    """The settings file holds something memvm cannot merge into without guessing."""


class InstallRefused(Exception):
    """The install as asked cannot be written as asked (a scope the host lacks, a personal path
    in a shared file, no memvm script to name); the message says what to do instead."""


@dataclass(frozen=True)
class _Event:
    name: str
    any_tool: bool  # a tool event: its group takes the match-all matcher
    # The handler's own timeout, in the host's unit, where the host's default is too short.
    timeout: int | None = None


# The events each host sends that memvm answers (see docs/hooks.md).
_EVENTS: dict[Host, tuple[_Event, ...]] = {
    Host.CLAUDE_CODE: (
        _Event("SessionStart", any_tool=False),
        _Event("UserPromptSubmit", any_tool=False),
        _Event("PreToolUse", any_tool=True),
        _Event("PostToolUse", any_tool=True),
        _Event("PostToolUseFailure", any_tool=True),
        _Event("Stop", any_tool=False),
        _Event("PreCompact", any_tool=False),
        # SessionEnd hooks share 1.5 s unless a handler asks for more (seconds): the catch-up
        # reads the whole transcript.
        _Event("SessionEnd", any_tool=False, timeout=15),
    ),
    Host.GEMINI_CLI: (
        _Event("SessionStart", any_tool=False),
        _Event("BeforeAgent", any_tool=False),
        _Event("BeforeTool", any_tool=True),
        _Event("AfterTool", any_tool=True),
        _Event("AfterAgent", any_tool=False),
        _Event("PreCompress", any_tool=False),
        _Event("SessionEnd", any_tool=False),
    ),
}

# Each host's settings folder; the file inside is settings.json in both scopes.
_FOLDERS: dict[Host, str] = {Host.CLAUDE_CODE: ".claude", Host.GEMINI_CLI: ".gemini"}
SETTINGS_FILE = "settings.json"
LOCAL_SETTINGS_FILE = "settings.local.json"  # Claude Code's own, kept out of version control by it

# Gemini CLI deduplicates hooks by name across its settings layers; a named handler is also what
# its `hooks.disabled` list refers to.
HANDLER_NAME = "memvm"


def settings_path(host: Host, scope: Scope, cwd: Path, home: Path) -> Path:
    if scope is Scope.LOCAL:
        if host is not Host.CLAUDE_CODE:
            raise InstallRefused(
                f"{host.value} has no personal settings file per project: use --scope user (yours, "
                "every project) or --scope project (shared with everyone who opens the project)"
            )
        return cwd / _FOLDERS[host] / LOCAL_SETTINGS_FILE
    base = cwd if scope is Scope.PROJECT else home
    return base / _FOLDERS[host] / SETTINGS_FILE


def memvm_program() -> str:
    """The absolute path of the `memvm` script this Python runs (the virtual environment's).

    Hosts run hooks through a shell that may not have the virtual environment on its PATH, so a
    personal settings file names the script itself."""
    script = "memvm.exe" if sys.platform == "win32" else "memvm"
    beside = Path(sys.executable).with_name(script)
    if beside.is_file():
        return str(beside)
    found = shutil.which("memvm")
    if found is None:
        raise InstallRefused(
            f"no memvm script beside {sys.executable} nor on PATH to name in the hook: run this "
            "install with the memvm the host should call (.venv/bin/memvm hooks install ...)"
        )
    return os.path.abspath(found)


def hook_command(host: Host, program: str, db: str | None, namespace: str | None) -> str:
    """The shell command a host runs: `PROGRAM hook HOST`, plus the database and namespace when given.

    The database path is made absolute, because hosts run hooks from whatever directory the
    session is in."""
    words = [program, "hook", host.value]
    if db is not None:
        words += ["--db", os.path.abspath(os.path.expanduser(db))]
    if namespace is not None:
        words += ["--namespace", namespace]
    return shlex.join(words)


def _handler(host: Host, command: str) -> dict[str, Any]:
    if host is Host.GEMINI_CLI:
        return {"name": HANDLER_NAME, "type": "command", "command": command}
    return {"type": "command", "command": command}


def _group(host: Host, event: _Event, command: str) -> dict[str, Any]:
    group: dict[str, Any] = {"matcher": "*"} if event.any_tool else {}
    handler = _handler(host, command)
    if event.timeout is not None:
        handler["timeout"] = event.timeout
    group["hooks"] = [handler]
    return group


def entries(host: Host, command: str) -> dict[str, Any]:
    """memvm's entries alone, as they would appear in an empty settings file."""
    return {"hooks": {event.name: [_group(host, event, command)] for event in _EVENTS[host]}}


def is_ours(handler: Any, host: Host) -> bool:
    """A handler that runs `memvm hook HOST`, whatever its flags or the path to memvm."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        words = shlex.split(handler["command"])
    except ValueError:  # unbalanced quotes: someone else's command
        return False
    program = Path(words[0]).name if words else ""
    return len(words) >= 3 and program in ("memvm", "memvm.exe") and words[1:3] == ["hook", host.value]


def merge(settings: Any, host: Host, command: str) -> dict[str, Any]:
    """The settings with memvm's entries in place; the argument itself is left unchanged.

    In each event memvm answers, the first handler of ours is updated in place (keeping any keys
    the user added, such as a timeout) and any further ones are dropped; when there is none, a new
    group is appended after the existing ones."""
    if not isinstance(settings, dict):
        raise SettingsRefused("it does not hold a JSON object")
    merged = copy.deepcopy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsRefused('its "hooks" is not a JSON object')
    for event in _EVENTS[host]:
        groups = hooks.setdefault(event.name, [])
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise SettingsRefused(f'its "hooks"."{event.name}" is not a list of JSON objects')
        if not _prune_ours(groups, host, command):
            groups.append(_group(host, event, command))
    return merged


def _prune_ours(groups: list[Any], host: Host, command: str | None) -> bool:
    """Drop our handlers from `groups`, but for the first when `command` is given, which is pointed
    at it; a group that held only handlers dropped here goes too. Whether any of ours was there."""
    found = False
    emptied = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            continue
        kept = []
        for handler in handlers:
            if not is_ours(handler, host):
                kept.append(handler)
            else:
                if command is not None and not found:
                    handler.update(_handler(host, command))
                    kept.append(handler)
                found = True
        if handlers and not kept:
            emptied.append(group)  # it held only handlers of ours that go, and would run nothing
        handlers[:] = kept
    groups[:] = [g for g in groups if not any(g is e for e in emptied)]
    return found


def remove(settings: Any, host: Host) -> dict[str, Any]:
    """The settings without memvm's handlers for `host`; the argument itself is left unchanged.

    A group left with no handler goes, and an event left with no group goes, when memvm's removal
    emptied it: anything that was already empty, and every other handler, stays."""
    if not isinstance(settings, dict):
        raise SettingsRefused("it does not hold a JSON object")
    kept = copy.deepcopy(settings)
    hooks = kept.get("hooks")
    if hooks is None:
        return kept
    if not isinstance(hooks, dict):
        raise SettingsRefused('its "hooks" is not a JSON object')
    for event, groups in list(hooks.items()):
        if isinstance(groups, list) and _prune_ours(groups, host, None) and not groups:
            del hooks[event]
    if not hooks and "hooks" in settings and settings["hooks"] != {}:
        del kept["hooks"]
    return kept


def disabled_by_name(settings: dict[str, Any]) -> bool:
    """Gemini CLI's `hooks.disabled` names memvm's handler, so the entries will not run."""
    hooks = settings.get("hooks")
    disabled = hooks.get("disabled") if isinstance(hooks, dict) else None
    return isinstance(disabled, list) and HANDLER_NAME in disabled
