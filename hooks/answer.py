"""One event's bytes to the host's answer, with an engine however it was opened; never raises.

Whatever goes wrong (bad input, an unknown event, a busy, full or broken database) the answer is
`{}`, which lets the host go on, with one line for stderr saying what was skipped, and the event
goes into the journal beside the database (`memvm doctor` reads it): a pre-tool event skipped is
a guard that failed open.
"""

import json
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any

from memvm.engine import Engine
from memvm.engine.errors import (
    DatabaseRefused,
    InvalidArgument,
    PageTooLong,
    StorageBusy,
    StorageError,
    StorageFull,
)
from memvm.engine.guard_config import GuardConfig, GuardConfigError, load_guard_config
from memvm.engine.hosts.hook_journal import record_skipped
from memvm.engine.paths import DatabasePathError
from memvm.hooks.events import EventKind, HookAnswer, HookEvent, MalformedEvent, session_name
from memvm.hooks.handle import UNCHECKABLE, HookSettings, handle, uncheckable_reason
from memvm.hooks.host_spec import HostSpec

OpenEngine = Callable[[], AbstractAsyncContextManager[Engine]]


@dataclass(frozen=True)
class HookRequest:
    host: HostSpec
    namespace: str
    recall_tokens: int
    guards: str  # the preset
    guard_config: str | None  # an absolute path
    raw: bytes

    def guard_settings(self) -> GuardConfig:
        """The preset, with the host's own tools as workspace tools, and the file over both; the
        host's model has none of memvm's tools, whatever the file says."""
        under: dict[str, object] = {
            "workspace_tools": self.host.protocol.workspace_tools,
            "editing_tools": self.host.protocol.editing_tools,
            # Under a hook every call of the agent is checked, most of them ordinary work: an
            # unsourced number warns, and denies only where the guard config names the tool.
            "consequential_tools": (),
        }
        chosen = load_guard_config(self.guards, self.guard_config, under)
        # The host runs each call as its model wrote it: no `$v1` is ever filled in for it.
        return replace(chosen, memvm_tools=False)


@dataclass(frozen=True)
class HookReply:
    answer: dict[str, Any]
    skipped: str | None = None  # why memvm stood aside
    engine_failed: bool = False  # the database itself failed, not the event
    warning: str | None = None  # the event was handled, but not all of it

    def stderr_line(self) -> str | None:
        """The one line the host logs, if there is anything to say."""
        if self.skipped is not None:
            return stderr_line(self.skipped)
        return None if self.warning is None else f"memvm hook: {self.warning}"


def read_event(host: HostSpec, raw: bytes) -> HookEvent:
    try:
        payload = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedEvent("the event on stdin is not JSON") from exc
    return host.protocol.parse(payload)


async def answer(open_engine: OpenEngine, db: str, request: HookRequest) -> HookReply:
    event: HookEvent | None = None
    try:
        event = read_event(request.host, request.raw)
        settings = HookSettings(
            host=request.host,
            namespace=request.namespace,
            recall_tokens=request.recall_tokens,
            guards=request.guard_settings(),
        )
        async with open_engine() as engine:
            decided = await handle(engine, event, settings)
        return HookReply(request.host.protocol.render(event, decided), warning=decided.warning)
    # The top of the hook: anything at all becomes "go on without memvm", never a blocked host, but
    # for a tool call whose arguments cannot be checked (here: not even read as an event; the
    # guards deny the others): letting it run would wave it past every guard.
    except Exception as exc:
        if isinstance(exc, UNCHECKABLE) and (name := _pre_tool_event(request, event)):
            return _uncheckable_call_denied(request, event, name, exc)
        reason = skipped_reason(exc)
        note_skipped(db, request, event, reason)
        # The event's own fault leaves the engine as it was.
        of_the_event = MalformedEvent | InvalidArgument | StorageBusy | GuardConfigError
        return HookReply({}, reason, engine_failed=not isinstance(exc, of_the_event))


def _pre_tool_event(request: HookRequest, event: HookEvent | None) -> str | None:
    """The host's name for the event when it is a pre-tool one, read from the raw bytes when the
    event itself could not be read."""
    if event is not None:
        return event.name if event.kind is EventKind.PRE_TOOL else None
    for name, kind in request.host.protocol.kinds.items():
        if kind is EventKind.PRE_TOOL and re.search(
            rb'"hook_event_name"\s*:\s*"%s"' % name.encode(), request.raw
        ):
            return name
    return None


def _uncheckable_call_denied(
    request: HookRequest, event: HookEvent | None, name: str, exc: Exception
) -> HookReply:
    pre_tool = event or HookEvent(kind=EventKind.PRE_TOOL, name=name, session="", digest="")
    return HookReply(request.host.protocol.render(pre_tool, HookAnswer(deny=uncheckable_reason(exc))))


def note_skipped(db: str, request: HookRequest, event: HookEvent | None, reason: str) -> None:
    """Journal an event memvm stood aside for, as precisely as the event could be read."""
    try:
        _journal(db, request, event, reason)
    # Best effort: the event that could not be handled may not be readable here either.
    except Exception:
        record_skipped(db, host=request.host.name, session="", event="", guard=False, reason=reason)


def _journal(db: str, request: HookRequest, event: HookEvent | None, reason: str) -> None:
    if event is None:
        event = _best_reading(request)
    record_skipped(
        db,
        host=request.host.name,
        session=event.session if event else "",
        event=event.name if event else "",
        guard=event is not None and event.kind is EventKind.PRE_TOOL,
        reason=reason,
    )


def _best_reading(request: HookRequest) -> HookEvent | None:
    """What can be told of an event its host's protocol refused: its name and session, if any."""
    try:
        payload = json.loads(request.raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict):
        return None
    name = payload.get("hook_event_name")
    name = name[:80] if isinstance(name, str) else ""
    return HookEvent(
        kind=request.host.protocol.kinds.get(name, EventKind.IGNORED),
        name=name,
        session=session_name(payload.get("session_id"), request.host.name),
        digest="",
    )


def skipped_reason(exc: BaseException) -> str:
    if isinstance(exc, MalformedEvent | GuardConfigError):
        return str(exc)
    if isinstance(exc, StorageBusy):
        return "the database stayed busy past --wait-ms"
    if isinstance(exc, StorageFull):
        return "the database has no room left (disk full or --max-db-mb)"
    if isinstance(exc, PageTooLong):
        return (
            f"the event's text is {exc.size} {exc.unit}s, over the {exc.limit}-{exc.unit} page limit "
            "(max_page_tokens), so it was not stored"
        )
    if isinstance(exc, InvalidArgument):
        return f"the event was not stored ({str(exc).rstrip('.')})"
    if isinstance(exc, DatabaseRefused | StorageError):
        return "the database cannot be used (run memvm doctor)"
    if isinstance(exc, DatabasePathError):
        return f"the database cannot be used: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"the database cannot be used ({exc.strerror}; run memvm doctor)"
    return f"the database or the event could not be handled ({type(exc).__name__}; run memvm doctor)"


def stderr_line(reason: str) -> str:
    return f"memvm hook: {reason}; the host goes on without memvm for this event"
