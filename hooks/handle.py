"""One hook event applied to memory: capture, recall and the guards, the same for every host."""

import json
from dataclasses import dataclass
from typing import Any

import anyio
from memvm.engine import Engine
from memvm.engine.errors import InvalidArgument
from memvm.engine.guard_config import GuardConfig
from memvm.engine.models.guards import CallVerdict, ToolCallCheck
from memvm.engine.models.pages import Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage
from memvm.hooks.catch_up import catch_up
from memvm.hooks.events import EventKind, HookAnswer, HookEvent, tool_result_digest
from memvm.hooks.host_spec import HostSpec
from memvm.hooks.project import event_project
from memvm.hooks.recall import recall
from memvm.hooks.replays import handled_digest
from memvm.hooks.session_start import start_context
from memvm.hooks.transcripts import Reply, read_transcript
from memvm.hooks.user_notes import CONFIRMATION, fact_about_user, keep_for_user

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
        case EventKind.SESSION_START:
            scope = engine.namespace(settings.namespace, project=event_project(event))
            context = await start_context(scope, settings.recall_tokens)
            return HookAnswer(context=context)
        case EventKind.CATCH_UP:
            if not event.transcript:
                return HookAnswer()
            warning = await catch_up(engine, event, settings.host, settings.namespace)
            return HookAnswer(warning=warning)
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
    scope = engine.session(settings.namespace, event.session, project=event_project(event))
    match event.kind:
        case EventKind.PRE_TOOL:
            try:
                check = await scope.check_tool_call(
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
        case EventKind.PROMPT:
            if not event.prompt.strip():
                return HookAnswer()
            # Ingesting the user's message starts the turn: budgets and repeats count afresh.
            ingested = await scope.ingest(messages=[IngestMessage(role=Role.USER, content=event.prompt)])
            kept = None
            own_pages = set(ingested.page_ids)
            if (fact := fact_about_user(event.prompt)) is not None:
                # The fact is the prompt's own words: said to be kept, not recalled back.
                note = await keep_for_user(scope, fact)
                own_pages.add(note)
                kept = CONFIRMATION
            context = await recall(
                scope, query=event.prompt, own_pages=own_pages, max_tokens=settings.recall_tokens
            )
            return HookAnswer(context="\n\n".join(part for part in (kept, context) if part) or None)
        case EventKind.TOOL_DONE | EventKind.TOOL_FAILED:
            await scope.record_tool_outcome(call=_outcome(event))
            return HookAnswer()
        case EventKind.REPLY:
            reply = event.reply
            if not reply.strip():
                reply = await _last_reply_in_transcript(event, settings.host)
            if reply.strip():
                await scope.ingest(messages=[IngestMessage(role=Role.ASSISTANT, content=reply)])
            return HookAnswer()
    return HookAnswer()


async def _last_reply_in_transcript(event: HookEvent, host: HostSpec) -> str:
    """The turn's final reply as the transcript holds it, for a host version whose stop event
    does not carry it (`last_assistant_message`)."""
    if not event.transcript:
        return ""
    transcript = await anyio.to_thread.run_sync(read_transcript, event.transcript, host.transcript)
    replies = [entry.text for entry in transcript.entries if isinstance(entry, Reply)]
    return replies[-1] if replies else ""


def _outcome(event: HookEvent) -> ToolOutcome:
    failed = event.kind is EventKind.TOOL_FAILED
    if failed and event.interrupted:
        outcome = Outcome.CANCELLED  # the user's interrupt, not the tool's failure: nothing to learn
    else:
        outcome = Outcome.FAILURE if failed else Outcome.SUCCESS
    return ToolOutcome(
        tool=event.tool,
        args=event.tool_input,
        outcome=outcome,
        result=None if failed else event.tool_response,
        error_message=(event.error or _text(event.tool_response)) if failed else None,
        duration_ms=event.duration_ms,
    )


def _text(value: Any) -> str:
    if value is None:
        return "the tool failed"
    return value if isinstance(value, str) else json.dumps(value, default=str)[:2_000]


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
