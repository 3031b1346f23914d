"""Hook events as memvm sees them, whatever the host: what happened, in which session, and the
answer to give back."""

import hashlib
import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from memvm.engine.names import is_name, is_tool_name
from memvm.engine.redaction import redact


class EventKind(StrEnum):
    PROMPT = "prompt"  # the user submitted a prompt: a new turn
    PRE_TOOL = "pre_tool"  # a tool is about to run: the guards decide
    TOOL_DONE = "tool_done"  # a tool ran and succeeded
    TOOL_FAILED = "tool_failed"  # a tool ran and failed
    REPLY = "reply"  # the agent's final reply of the turn
    SESSION_START = "session_start"  # a session starts (or resumes): context before any prompt
    CATCH_UP = "catch_up"  # compaction or session end: add what the live events missed
    IGNORED = "ignored"  # an event memvm knows and has nothing to do for


class MalformedEvent(Exception):
    """The event on stdin is not one the host's protocol describes."""


@dataclass(frozen=True)
class HookEvent:
    kind: EventKind
    name: str  # the host's own name for the event, echoed in the answer
    session: str
    digest: str
    prompt: str = ""
    tool: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    error: str = ""
    duration_ms: float | None = None
    reply: str = ""
    tool_use_id: str = ""  # the host's id of the call, when it gives one
    transcript: str = ""  # the path of the host's own record of the session, when the event names one
    interrupted: bool = False  # the user stopped the call: it says nothing about the tool
    cwd: str = ""  # the host's working directory: which project's memory the event belongs to


@dataclass(frozen=True)
class HookAnswer:
    """What memvm has to say: a reason to deny the call, context to add, or nothing."""

    deny: str | None = None
    context: str | None = None
    warning: str | None = None  # for the operator, on stderr: the event was handled, in part


def tool_result_digest(session: str, tool_use_id: str) -> str:
    """Equal for every report of one call's result: the live event, its replay, and the same call
    read back from the transcript later."""
    canonical = json.dumps(["tool_result", session, tool_use_id], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


_NOT_NAME = re.compile(r"[^A-Za-z0-9_.:\-]")
_NOT_TOOL_NAME = re.compile(r"[^A-Za-z0-9_.:/\-]")


def session_name(raw: Any, host: str) -> str:
    """The host's session id as a memvm session name, the same for the same id every time.

    An id that is already a valid name is kept as it is. Any other (a final newline, slashes,
    NUL, emoji, 10 KB of text) is stored under no name a restore would refuse: its invalid
    characters replaced, cut short, and a digest of the whole id appended, so two ids never share
    a session.
    """
    if not isinstance(raw, str) or not raw:
        return host
    if is_name(raw):
        return raw
    return _named(raw, _NOT_NAME.sub("-", raw).lstrip("_.:-")[:50], host)


def tool_name(raw: str) -> str:
    """The host's name for a tool as memvm keeps it, the same for the same name every time: as
    it is when it is a tool name an MCP client could send, else mapped as session ids are."""
    if is_tool_name(raw):
        return raw
    return _named(raw, _NOT_TOOL_NAME.sub("-", raw).lstrip(".:/-")[:100], "tool")


def _named(raw: str, cleaned: str, fallback: str) -> str:
    tag = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{cleaned}-{tag}" if cleaned else f"{fallback}-{tag}"


def event_digest(host: str, payload: dict[str, Any]) -> str:
    """Equal for a replay of the same event: the host's name and every field, in a canonical order."""
    canonical = json.dumps([host, payload], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def as_object(value: Any) -> dict[str, Any]:
    """Tool input as an object: the hosts send one, but a bare value is kept under `input`."""
    if isinstance(value, dict):
        return value
    return {} if value is None else {"input": value}


def text_field(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name)
    return value if isinstance(value, str) else ""


# The events about one tool call, which name the tool.
TOOL_EVENTS = (EventKind.PRE_TOOL, EventKind.TOOL_DONE, EventKind.TOOL_FAILED)


def known_event(payload: Any, kinds: dict[str, EventKind]) -> tuple[dict[str, Any], str, EventKind]:
    """The event object, its name and its kind, by the host's table of `kinds`.

    Refuses (MalformedEvent) what is not an object, an event the table does not name, and a tool
    event without its tool's name.
    """
    if not isinstance(payload, dict):
        raise MalformedEvent("the event is not a JSON object")
    name = payload.get("hook_event_name")
    if not isinstance(name, str) or name not in kinds:
        # Quoted for the operator's log, where a secret must not land either.
        raise MalformedEvent(f"unknown event {redact(str(name)[:60])!r}")
    kind = kinds[name]
    if kind in TOOL_EVENTS and not isinstance(payload.get("tool_name"), str):
        raise MalformedEvent(f"{name} without a tool_name")
    return payload, name, kind
