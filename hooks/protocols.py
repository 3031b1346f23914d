"""Each host's reading of its events and writing of its answers; what memvm does is the same for all."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memvm.hooks import claude_code, gemini_cli
from memvm.hooks.events import EventKind, HookAnswer, HookEvent, Host


@dataclass(frozen=True)
class HostProtocol:
    parse: Callable[[Any], HookEvent]
    render: Callable[[HookEvent, HookAnswer], dict[str, Any]]
    # The host's event names, to what each is for memvm (also for an event that could not be read).
    kinds: Mapping[str, EventKind]
    # The host's own tools on the user's files and shell, guarded by caps only.
    workspace_tools: frozenset[str]
    # Of those, the ones that change files: a command run again after one is a new run.
    editing_tools: frozenset[str]


_PROTOCOLS = {
    Host.CLAUDE_CODE: HostProtocol(
        claude_code.parse,
        claude_code.render,
        claude_code.KINDS,
        claude_code.WORKSPACE_TOOLS,
        claude_code.EDITING_TOOLS,
    ),
    Host.GEMINI_CLI: HostProtocol(
        gemini_cli.parse,
        gemini_cli.render,
        gemini_cli.KINDS,
        gemini_cli.WORKSPACE_TOOLS,
        gemini_cli.EDITING_TOOLS,
    ),
}


def protocol(host: Host) -> HostProtocol:
    return _PROTOCOLS[host]
