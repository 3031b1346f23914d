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
from pathlib import Path
from typing import Any

from memvm.hooks.events import TOOL_EVENTS, EventKind
from memvm.hooks.host_spec import HostSpec, Scope


class SettingsRefused(Exception):
    """The settings file holds something memvm cannot merge into without guessing."""


class InstallRefused(Exception):
    """The install as asked cannot be written as asked (a scope the host lacks, a personal path
    in a shared file, no memvm script to name); the message says what to do instead."""


# The file inside each host's settings folder, in every scope.
SETTINGS_FILE = "settings.json"
LOCAL_SETTINGS_FILE = "settings.local.json"  # the personal one per project, where a host has one

# The name a handler carries where the host's handlers carry one (HostSettings.named_handlers).
HANDLER_NAME = "memvm"


def settings_path(host: HostSpec, scope: Scope, cwd: Path, home: Path) -> Path:
    if scope is Scope.LOCAL:
        if not host.settings.local_file:
            raise InstallRefused(
                f"{host.name} has no personal settings file per project: use --scope user (yours, "
                "every project) or --scope project (shared with everyone who opens the project)"
            )
        return cwd / host.settings.folder / LOCAL_SETTINGS_FILE
    base = cwd if scope is Scope.PROJECT else home
    return base / host.settings.folder / SETTINGS_FILE


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


def hook_command(host: HostSpec, program: str, db: str | None, namespace: str | None) -> str:
    """The shell command a host runs: `PROGRAM hook HOST`, plus the database and namespace when given.

    The database path is made absolute, because hosts run hooks from whatever directory the
    session is in."""
    words = [program, "hook", host.name]
    if db is not None:
        words += ["--db", os.path.abspath(os.path.expanduser(db))]
    if namespace is not None:
        words += ["--namespace", namespace]
    return shlex.join(words)


def _handler(host: HostSpec, command: str) -> dict[str, Any]:
    if host.settings.named_handlers:
        return {"name": HANDLER_NAME, "type": "command", "command": command}
    return {"type": "command", "command": command}


def _group(host: HostSpec, event: str, command: str) -> dict[str, Any]:
    group: dict[str, Any] = {"matcher": "*"} if host.protocol.kinds[event] in TOOL_EVENTS else {}
    handler = _handler(host, command)
    timeout = host.settings.timeouts.get(event)
    if timeout is not None:
        handler["timeout"] = timeout
    group["hooks"] = [handler]
    return group


def answered_events(host: HostSpec) -> list[str]:
    """The events memvm's entries ask the host to send: every one its protocol does something for."""
    return [name for name, kind in host.protocol.kinds.items() if kind is not EventKind.IGNORED]


def entries(host: HostSpec, command: str) -> dict[str, Any]:
    """memvm's entries alone, as they would appear in an empty settings file."""
    return {"hooks": {event: [_group(host, event, command)] for event in answered_events(host)}}


def is_ours(handler: Any, host: HostSpec) -> bool:
    """A handler that runs `memvm hook HOST`, whatever its flags or the path to memvm."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        words = shlex.split(handler["command"])
    except ValueError:  # unbalanced quotes: someone else's command
        return False
    program = Path(words[0]).name if words else ""
    return len(words) >= 3 and program in ("memvm", "memvm.exe") and words[1:3] == ["hook", host.name]


def merge(settings: Any, host: HostSpec, command: str) -> dict[str, Any]:
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
    for event in answered_events(host):
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise SettingsRefused(f'its "hooks"."{event}" is not a list of JSON objects')
        if not _prune_ours(groups, host, command):
            groups.append(_group(host, event, command))
    return merged


def _prune_ours(groups: list[Any], host: HostSpec, command: str | None) -> bool:
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


def remove(settings: Any, host: HostSpec) -> dict[str, Any]:
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
    """`hooks.disabled` names memvm's handler, so a host whose handlers carry names will not run them."""
    hooks = settings.get("hooks")
    disabled = hooks.get("disabled") if isinstance(hooks, dict) else None
    return isinstance(disabled, list) and HANDLER_NAME in disabled
