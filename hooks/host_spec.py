"""An agent host as memvm knows it, in one object: how its events read and its answers are
written, which of its tools work on the user's files, where its settings file is and what goes in
it, and how its transcript reads.

Each host defines its `HostSpec` in a module of its own (hooks/claude_code.py,
hooks/gemini_cli.py); hooks/hosts.py lists them. Light on purpose: the hook's client loads every
host to read its own command line, before anything of the engine is imported.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from memvm.hooks.events import EventKind, HookAnswer, HookEvent
from memvm.hooks.transcripts import TranscriptFormat


class Scope(StrEnum):
    LOCAL = "local"  # this project, this person: Claude Code's .claude/settings.local.json
    PROJECT = "project"  # this project, the whole team: committed with it
    USER = "user"  # every project, this person: under $HOME


@dataclass(frozen=True)
class HostProtocol:
    """How the host's events read and its answers are written; what memvm does is the same for all."""

    parse: Callable[[Any], HookEvent]
    render: Callable[[HookEvent, HookAnswer], dict[str, Any]]
    # The host's event names, to what each is for memvm (also for an event that could not be read),
    # in the order memvm's entries in the settings file list them: every one not IGNORED is asked for.
    kinds: Mapping[str, EventKind]
    # The host's own tools on the user's files and shell, guarded by caps only.
    workspace_tools: frozenset[str]
    # Of those, the ones that change files: a command run again after one is a new run.
    editing_tools: frozenset[str]


@dataclass(frozen=True)
class HostSettings:
    """The host's settings file, as `memvm hooks install` writes memvm's entries into it."""

    folder: str  # the settings folder, in the project and under $HOME; the file is settings.json
    default_scope: Scope  # where a personal setup goes when no scope is named
    # A personal file per project, never committed (settings.local.json): what Scope.LOCAL names.
    local_file: bool = False
    # Each handler carries memvm's name: what the host deduplicates hooks by, and what its list of
    # disabled hooks refers to.
    named_handlers: bool = False
    # A handler's own timeout per event, in the host's unit, where the host's default is too short.
    timeouts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class HostSpec:
    name: str  # on the command line, in settings files and in the database: never changes
    title: str  # as the host calls itself, in sentences for the operator
    protocol: HostProtocol
    settings: HostSettings
    transcript: TranscriptFormat
    # Every event carries the moment it was sent, so a prompt or a final reply sent again word for
    # word is a new event by its digest alone; without one, hooks/replays.py tells them apart.
    dated_events: bool
