"""The digest an event is marked handled under: the same for the same event sent again, new for a
new call, even one identical to the last.

A host that names each call (Claude Code's `tool_use_id`) makes this plain: the id is in the
event. Without one (an older Claude Code; Gemini CLI, whose `timestamp` repeats within a
millisecond), the same call made twice sends the same event twice, and a host that sends an event
again (after a timeout) sends the very same bytes. What tells them apart is the call's result in
between: a call made again after the first one completed is a new call. So, for a tool event with
no call id, with N the session's recorded outcomes of that tool with those arguments:

- a pre-tool event is call N+1 starting. Its digest is a key of (host, session, tool, arguments,
  N), then a digest of the event: sent again before the call completes, it is the same; made
  again after, N has grown. A call denied never completes, so the same call tried again gets the
  same denial.
- a result completes call N+1 when that call's pre-tool event was seen (a digest beginning with
  its key): its digest is the event's with N. Otherwise no call started since the last result
  (N), so it is that result sent again: the event's digest with N-1, as that one was marked.

Two identical calls whose events arrive together, before either completes, stay one call: no
byte of them differs. A result whose pre-tool event was never handled (the database was busy)
is taken for a replay when it repeats the previous result of the same call exactly.

Claude Code's prompt and final reply carry no id either ("continue" typed twice, a turn that ends
"Done." like the last): sent again, it is still the session's last transcript page, so it is the
same event; the same words after anything else are new, marked under the event's digest numbered
by the session's transcript so far. (Gemini CLI's carry the moment they were sent: its digest
tells them apart.)
"""

import hashlib
import json

from memvm.engine import Engine
from memvm.engine.guards.literals import call_hash
from memvm.hooks.events import TOOL_EVENTS, EventKind, HookEvent
from memvm.hooks.host_spec import HostSpec

# What a prompt and a final reply are stored as: Role.USER and Role.ASSISTANT, by their values, as
# the pre-tool path (which imports no page model) reads this module too.
_SAID = {EventKind.PROMPT: "user", EventKind.REPLY: "assistant"}
_TAIL = 1
# Hex digits of the call's key that begin a pre-tool event's digest; the rest are the event's.
_KEY_CHARS = 32


async def handled_digest(engine: Engine, namespace: str, host: HostSpec, event: HookEvent) -> str:
    """The digest `event` is looked up and marked handled under (see the module's docstring)."""
    if event.kind in _SAID and not host.dated_events:
        return await _said_digest(engine, namespace, event)
    if event.kind not in TOOL_EVENTS or event.tool_use_id:
        return event.digest
    completed = await engine.hook_events.outcomes_recorded(
        namespace=namespace, session=event.session, tool=event.tool, args=event.tool_input
    )
    if event.kind is EventKind.PRE_TOOL:
        return _call_key(host.name, event, completed) + event.digest[_KEY_CHARS:]
    started = await engine.hook_events.handled_with_prefix(
        namespace=namespace, prefix=_call_key(host.name, event, completed)
    )
    return _numbered(event.digest, completed if started else completed - 1)


async def _said_digest(engine: Engine, namespace: str, event: HookEvent) -> str:
    if await engine.hook_events.handled(namespace=namespace, digest=event.digest) is None:
        return event.digest
    role, text = _SAID[event.kind], event.prompt if event.kind is EventKind.PROMPT else event.reply
    if not text.strip():
        return event.digest  # nothing said (a reply left to the transcript): its own event
    stored = engine.redaction.text(text)
    latest = await engine.session(namespace, event.session).session_transcript(limit=_TAIL)
    if latest and latest[-1].role == role and latest[-1].content.strip() == stored.strip():
        return event.digest  # sent again: the same event
    count = await engine.session(namespace, event.session).transcript_pages()
    return _numbered(event.digest, count)


def _call_key(host: str, event: HookEvent, completed: int) -> str:
    canonical = json.dumps(["call", host, event.session, call_hash(event.tool, event.tool_input), completed])
    return hashlib.sha256(canonical.encode()).hexdigest()[:_KEY_CHARS]


def _numbered(digest: str, completed: int) -> str:
    return hashlib.sha256(f"{digest}:{completed}".encode()).hexdigest()
