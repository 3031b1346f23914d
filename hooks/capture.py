"""The hook events that store and recall: a session's start, a catch-up from the transcript, a
user's prompt, a tool's outcome, the agent's reply.

Apart from the pre-tool check (handle.py), which imports this module only for these events: a
host waits on every tool call, and the check needs none of paging, recall or their models.
"""

import json
from typing import Any

import anyio
from memvm.engine import Engine
from memvm.engine.models.pages import Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage
from memvm.hooks.catch_up import catch_up
from memvm.hooks.events import EventKind, HookAnswer, HookEvent
from memvm.hooks.handle import HookSettings
from memvm.hooks.host_spec import HostSpec
from memvm.hooks.project import event_project
from memvm.hooks.recall import recall
from memvm.hooks.session_start import start_context
from memvm.hooks.transcripts import Reply, read_transcript
from memvm.hooks.user_notes import CONFIRMATION, fact_about_user, keep_for_user


async def read_back(engine: Engine, event: HookEvent, settings: HookSettings) -> HookAnswer:
    """A session's start (what to recall) or a catch-up (what the transcript holds that was missed)."""
    if event.kind is EventKind.SESSION_START:
        scope = engine.namespace(settings.namespace, project=event_project(event))
        return HookAnswer(context=await start_context(scope, settings.recall_tokens))
    if not event.transcript:
        return HookAnswer()
    return HookAnswer(warning=await catch_up(engine, event, settings.host, settings.namespace))


async def record(engine: Engine, event: HookEvent, settings: HookSettings) -> HookAnswer:
    """A prompt, a tool's outcome or a reply, stored; a prompt also gets what is recalled for it."""
    scope = engine.session(settings.namespace, event.session, project=event_project(event))
    match event.kind:
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
