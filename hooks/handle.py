"""One hook event applied to memory: capture, recall and the guards, the same for every host."""

import json
from dataclasses import dataclass

from memvm.engine import Engine
from memvm.engine.errors import InvalidArgument
from memvm.engine.guard_config import GuardConfig
from memvm.engine.models.guards import CallVerdict, ToolCallCheck
from memvm.hooks.events import EventKind, HookAnswer, HookEvent, tool_result_digest
from memvm.hooks.host_spec import HostSpec
from memvm.hooks.project import event_project
from memvm.hooks.replays import handled_digest

# How much of a repeated call's bound result a deny reason quotes.
_CACHED_CHARS = 1_500

# What a tool call's own arguments can hold that no reader can check: JSON nested past the parser,
# an integer past Python's digit limit, text that is not Unicode (a lone surrogate).
UNCHECKABLE = (RecursionError, ValueError, UnicodeError)


def uncheckable_reason(exc: BaseException) -> str:
    """Why a call whose arguments raised `exc` (one of UNCHECKABLE) is denied, for its model."""
    if isinstance(exc, RecursionError):
        what = "are nested too deep to read"
    elif isinstance(exc, UnicodeError):
        what = "hold text that is not valid Unicode (a lone surrogate)"
    else:
        what = "hold a value no reader can take (a number of thousands of digits)"
    return (
        f"memvm guard: the call's arguments {what}, so they cannot be checked; call it with plain arguments"
    )


@dataclass(frozen=True)
class HookSettings:
    host: HostSpec
    namespace: str
    recall_tokens: int
    guards: GuardConfig


async def handle(engine: Engine, event: HookEvent, settings: HookSettings) -> HookAnswer:
    """Apply `event` once: a replay of an event handled before adds nothing and gets the same
    decision, while a new call identical to an earlier one is a new call (hooks/replays.py)."""
    match event.kind:
        case EventKind.IGNORED:
            return HookAnswer()
        # Neither is marked handled: a start only reads, and a catch-up adds nothing twice by
        # itself, while the host may send the same event again (a second compaction) with more
        # to read.
        case EventKind.SESSION_START | EventKind.CATCH_UP:
            from memvm.hooks.capture import read_back  # as _apply imports it, and why

            return await read_back(engine, event, settings)
    namespace = settings.namespace
    digest = await handled_digest(engine, namespace, settings.host, event)
    seen = await engine.hook_events.handled(namespace=namespace, digest=digest)
    if seen is not None:
        return HookAnswer(deny=seen.answer)
    answer = await _apply(engine, event, settings)
    await engine.hook_events.record(
        namespace=namespace,
        host=settings.host.name,
        session=event.session,
        digest=digest,
        event=event.name,
        answer=answer.deny,
    )
    if answer.deny is not None and event.tool_use_id:
        # The call never runs: the error the host reports for it (a failure event, the result its
        # transcript shows) is this denial, not the tool's outcome, and teaches nothing about it.
        await engine.hook_events.record(
            namespace=namespace,
            host=settings.host.name,
            session=event.session,
            digest=tool_result_digest(event.session, event.tool_use_id),
            event=event.name,
        )
    return answer


async def _apply(engine: Engine, event: HookEvent, settings: HookSettings) -> HookAnswer:
    if event.kind is not EventKind.PRE_TOOL:
        # Imported for the events that store and recall: a pre-tool answer in its own process
        # never pays for paging, recall and the models they bring.
        from memvm.hooks.capture import record

        return await record(engine, event, settings)
    guards = engine.guards(settings.namespace, event.session, project=event_project(event))
    try:
        check = await guards.check_tool_call(
            tool=event.tool,
            args=event.tool_input,
            guards_config=settings.guards,
            will_run=True,  # the host runs the call once it is allowed
        )
    except InvalidArgument as exc:
        # Arguments the guards cannot read (nested past their depth, too many values):
        # letting the call run would let any call past every guard by wrapping it.
        return HookAnswer(deny=f"memvm guard: the arguments cannot be checked: {exc}")
    except UNCHECKABLE as exc:
        return HookAnswer(deny=uncheckable_reason(exc))
    return _guard_answer(check)


def _guard_answer(check: ToolCallCheck) -> HookAnswer:
    said = [reason.message for reason in check.reasons]
    if check.verdict is CallVerdict.BLOCK:
        reason = "memvm guard: " + " ".join(said)
        if check.cached_result is not None:
            cached = json.dumps(check.cached_result, default=str)
            reason += f" The earlier result: {cached[:_CACHED_CHARS]}"
        return HookAnswer(deny=reason)
    if check.verdict is CallVerdict.WARN:
        return HookAnswer(context="memvm guard warning: " + " ".join(said))
    return HookAnswer()
