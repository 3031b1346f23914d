"""Each host's reading of its events and writing of its answers; what memvm does is the same for all."""

from collections.abc import Callable
from typing import Any

from memvm.hooks import claude_code, gemini_cli
from memvm.hooks.events import EventKind, HookAnswer, HookEvent, Host

Parse = Callable[[Any], HookEvent]
Render = Callable[[HookEvent, HookAnswer], dict[str, Any]]
KindOf = Callable[[str], EventKind | None]

_PROTOCOLS: dict[Host, tuple[Parse, Render]] = {
    Host.CLAUDE_CODE: (claude_code.parse, claude_code.render),
    Host.GEMINI_CLI: (gemini_cli.parse, gemini_cli.render),
}


_KINDS: dict[Host, KindOf] = {Host.CLAUDE_CODE: claude_code.kind_of, Host.GEMINI_CLI: gemini_cli.kind_of}


def protocol(host: Host) -> tuple[Parse, Render]:
    return _PROTOCOLS[host]


def kind_of(host: Host, name: str) -> EventKind | None:
    return _KINDS[host](name)


_WORKSPACE_TOOLS: dict[Host, frozenset[str]] = {
    Host.CLAUDE_CODE: claude_code.WORKSPACE_TOOLS,
    Host.GEMINI_CLI: gemini_cli.WORKSPACE_TOOLS,
}


def workspace_tools(host: Host) -> frozenset[str]:
    """The host's own tools on the user's files and shell, guarded by caps only."""
    return _WORKSPACE_TOOLS[host]
