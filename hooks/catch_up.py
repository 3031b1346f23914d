"""Catching up from the host's transcript at compaction and at session end.

The live events can miss things: a hook that timed out, a turn interrupted before its Stop, hooks
installed mid-session. The transcript has it all, so what it holds beyond what the session already
has is added: prompts and final replies as transcript pages, and (Claude Code) tool calls as
outcomes. Nothing is added twice, however often the same transcript is read: a message counts as
present while the session holds as many copies of it as the transcript does, and a call is known
by the host's id for it, marked when it is captured live or here. An entry that cannot be stored
(text that is not Unicode, arguments nested past what a reader takes) is left out, and the rest is
captured, as a line that does not parse is.
"""

from collections import Counter
from collections.abc import Sequence

import anyio
from memvm.engine import Engine
from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage
from memvm.hooks.events import HookEvent, tool_name, tool_result_digest
from memvm.hooks.host_spec import HostSpec
from memvm.hooks.project import event_project
from memvm.hooks.transcripts import Prompt, Reply, ToolCall, read_transcript

# The session's transcript pages compared against, newest first: bounds the read.
_STORED_PAGES = 20_000
# What one run adds at most, and per transaction: the host waits (Claude Code gives SessionEnd
# 1.5 s), and what is committed stays if it stops waiting. The earliest missing entries go first,
# so a run that stops short leaves the rest, in order, to the next compaction or session end.
_MAX_ADDED = 200
_BATCH = 25
# Longer messages are left out: counting them would outlast the host's patience, and a page
# holds at most the engine's max_page_tokens (a token is at most 4 bytes of a character).
_MAX_MESSAGE_CHARS = 50_000
# What an entry of the host's file can hold that no write takes: text with a lone surrogate
# (UnicodeError, a ValueError), values nested past a reader or the engine's limits.
_UNSTORABLE = (ValueError, RecursionError, InvalidArgument)


def _key(engine: Engine, role: Role, text: str) -> tuple[Role, str]:
    # Stored text went through redaction; compare the transcript's text as it would be stored.
    return role, engine.redaction.text(text).strip()


async def catch_up(engine: Engine, event: HookEvent, host: HostSpec, namespace: str) -> str | None:
    """Add what the transcript the event names holds and the session does not; what could not be
    read, if anything, for one stderr line."""
    transcript = await anyio.to_thread.run_sync(read_transcript, event.transcript, host.transcript)
    stored = await engine.session(namespace, event.session).session_transcript(limit=_STORED_PAGES)
    present = Counter((page.role, page.content.strip()) for page in stored)
    problems = [transcript.problem] if transcript.problem is not None else []
    project = event_project(event)  # once: it looks through the folders above the host's
    pending: list[IngestMessage] = []
    added = left_out = 0
    for entry in transcript.entries:
        if added >= _MAX_ADDED:
            problems.append(
                f"more than {_MAX_ADDED} transcript entries were missing; the rest come next time"
            )
            break
        if isinstance(entry, Prompt | Reply):
            if len(entry.text) > _MAX_MESSAGE_CHARS:
                continue
            role = Role.USER if isinstance(entry, Prompt) else Role.ASSISTANT
            key = _key(engine, role, entry.text)
            if present[key] > 0:
                present[key] -= 1
                continue
            pending.append(IngestMessage(role=role, content=entry.text))
            added += 1
            if len(pending) >= _BATCH:
                left_out += await _ingest(engine, namespace, event, project, pending)
                pending = []
        elif isinstance(entry, ToolCall):
            # Messages before the call go in first, so the call lands in its turn.
            left_out += await _ingest(engine, namespace, event, project, pending)
            pending = []
            try:
                added += await _record_call(engine, event, project, namespace, host.name, entry)
            except _UNSTORABLE:
                left_out += 1
    left_out += await _ingest(engine, namespace, event, project, pending)
    if left_out:
        problems.append(f"{left_out} transcript entr{'y' if left_out == 1 else 'ies'} could not be stored")
    if problems:
        return "; ".join(problems) + "; what was readable is captured"
    return None


async def _ingest(
    engine: Engine, namespace: str, event: HookEvent, project: str | None, messages: Sequence[IngestMessage]
) -> int:
    """Store `messages` in the event's session and `project`; how many could not be stored."""
    if not messages:
        return 0
    try:
        await engine.session(namespace, event.session, project=project).ingest(messages=messages)
    except _UNSTORABLE:
        if len(messages) == 1:
            return 1
        # Nothing of the batch was written: store them one by one, leaving out the ones that fail.
        left_out = 0
        for message in messages:
            left_out += await _ingest(engine, namespace, event, project, [message])
        return left_out
    return 0


async def _record_call(
    engine: Engine, event: HookEvent, project: str | None, namespace: str, host: str, call: ToolCall
) -> int:
    """Record the call unless it was; how many calls were added (0 or 1)."""
    digest = tool_result_digest(event.session, call.tool_use_id)
    if await engine.hook_events.handled(namespace=namespace, digest=digest) is not None:
        return 0
    outcome = ToolOutcome(
        tool=tool_name(call.tool),
        args=call.args,
        outcome=Outcome.FAILURE if call.failed else Outcome.SUCCESS,
        result=None if call.failed else call.result,
        error_message=(call.result or "the tool failed") if call.failed else None,
    )
    await engine.session(namespace, event.session, project=project).record_tool_outcome(call=outcome)
    await engine.hook_events.record(
        namespace=namespace, host=host, session=event.session, digest=digest, event=event.name
    )
    return 1
