"""memvm's entries in a host's settings file: what they are, where the file lives, and how they
are merged into whatever the file already holds.

The merge touches only memvm's own handlers (known by their command, `memvm hook HOST ...`), so
other hooks, other settings and keys inside `hooks` that are not events (Gemini CLI's `enabled`,
`disabled`, `notifications`) stay as they were, and merging twice gives the same file.
"""

import copy
import os
import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from memvm.hooks.events import Host


class Scope(StrEnum):
    PROJECT = "project"  # the settings folder under the current directory
    USER = "user"  # the settings folder under $HOME


class SettingsRefused(Exception):
    """The settings file holds something memvm cannot merge into without guessing."""


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

# Gemini CLI deduplicates hooks by name across its settings layers; a named handler is also what
# its `hooks.disabled` list refers to.
HANDLER_NAME = "memvm"


def settings_path(host: Host, scope: Scope, cwd: Path, home: Path) -> Path:
    base = cwd if scope is Scope.PROJECT else home
    return base / _FOLDERS[host] / SETTINGS_FILE


def hook_command(host: Host, db: str | None, namespace: str | None) -> str:
    """The shell command a host runs: `memvm hook HOST`, plus the database and namespace when given.

    The database path is made absolute, because hosts run hooks from whatever directory the
    session is in."""
    words = ["memvm", "hook", host.value]
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
    return len(words) >= 3 and Path(words[0]).name == "memvm" and words[1:3] == ["hook", host.value]


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
        if not _update_ours(groups, host, command):
            groups.append(_group(host, event, command))
    return merged


def _update_ours(groups: list[dict[str, Any]], host: Host, command: str) -> bool:
    """Point the first of our handlers at `command` and drop the others; False if there was none."""
    found = False
    emptied = []
    for group in groups:
        handlers = group.get("hooks")
        if not isinstance(handlers, list):
            continue
        kept = []
        for handler in handlers:
            if not is_ours(handler, host):
                kept.append(handler)
            elif not found:
                handler.update(_handler(host, command))
                kept.append(handler)
                found = True
        if handlers and not kept:
            emptied.append(group)  # it held only a duplicate of ours, and would run nothing
        handlers[:] = kept
    groups[:] = [g for g in groups if not any(g is e for e in emptied)]
    return found


def disabled_by_name(settings: dict[str, Any]) -> bool:
    """Gemini CLI's `hooks.disabled` names memvm's handler, so the entries will not run."""
    hooks = settings.get("hooks")
    disabled = hooks.get("disabled") if isinstance(hooks, dict) else None
    return isinstance(disabled, list) and HANDLER_NAME in disabled
