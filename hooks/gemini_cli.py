"""Gemini CLI as a host: its hook protocol (https://geminicli.com/docs/hooks/reference), its
settings file and its transcript.

Each event arrives as one JSON object on stdin (common fields `session_id`, `transcript_path`,
`cwd`, `hook_event_name`, `timestamp`); the answer is one JSON object on stdout with exit code 0,
the form the reference prefers for all logic. Exit code 2 would block, so memvm never uses it: a
deny is `{"decision": "deny", "reason": ...}`, and context is `additionalContext` in
`hookSpecificOutput`, which only SessionStart, BeforeAgent and AfterTool take.

The transcript is JSON lines of message records (`id`, `type` "user" or "gemini", `content` as a
string or text parts), with `{"$set": ...}` metadata updates and `{"$rewindTo": id}` rewinds, or,
in older versions, one JSON document with a `messages` list
(packages/core/src/services/chatRecordingService.ts in google-gemini/gemini-cli).
"""

import json
from typing import Any

from memvm.hooks.events import (
    EventKind,
    HookAnswer,
    HookEvent,
    as_object,
    event_digest,
    known_event,
    session_name,
    text_field,
    tool_name,
)
from memvm.hooks.host_spec import HostProtocol, HostSettings, HostSpec, Scope
from memvm.hooks.transcripts import Entry, Records, TranscriptFormat, Turns, joined

NAME = "gemini-cli"

KINDS = {
    "SessionStart": EventKind.SESSION_START,
    "BeforeAgent": EventKind.PROMPT,
    "BeforeTool": EventKind.PRE_TOOL,
    "AfterTool": EventKind.TOOL_DONE,
    "AfterAgent": EventKind.REPLY,
    # Before the history is compressed, and when the session ends: read what the hooks missed.
    "PreCompress": EventKind.CATCH_UP,
    "SessionEnd": EventKind.CATCH_UP,
    # Documented events memvm has nothing to do for (yet): answered with nothing, quietly.
    "Notification": EventKind.IGNORED,
    "BeforeModel": EventKind.IGNORED,
    "AfterModel": EventKind.IGNORED,
    "BeforeToolSelection": EventKind.IGNORED,
}

# Events whose `hookSpecificOutput` takes `additionalContext`. BeforeTool is not one of them, so a
# guard warning there has no way to reach the model; the call runs and the guard still counts it.
_TAKES_CONTEXT = {"SessionStart", "BeforeAgent", "AfterTool"}


def _failure(response: Any) -> str | None:
    """The error of a failed tool, or None when it succeeded.

    No separate failure event exists: a failed call is an AfterTool whose `tool_response` carries
    `error` (`{"message", "type"}`), absent on success.
    """
    if not isinstance(response, dict):
        return None
    error = response.get("error")
    if error is None or error is False:
        return None
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message
        kind = error.get("type")
        return f"the tool failed ({kind})" if isinstance(kind, str) and kind else "the tool failed"
    return error if isinstance(error, str) and error else json.dumps(error, default=str)[:2_000]


def _result(response: Any) -> Any:
    # What the model was given (`llmContent`); an older documented shape sends the text alone.
    if isinstance(response, dict) and "llmContent" in response:
        return response["llmContent"]
    return response


def parse(payload: Any) -> HookEvent:
    payload, name, kind = known_event(payload, KINDS)
    response = payload.get("tool_response")
    error = _failure(response) if kind is EventKind.TOOL_DONE else None
    return HookEvent(
        kind=EventKind.TOOL_FAILED if error is not None else kind,
        name=name,
        session=session_name(payload.get("session_id"), NAME),
        digest=event_digest(NAME, payload),
        prompt=text_field(payload, "prompt") if kind is EventKind.PROMPT else "",
        tool=tool_name(text_field(payload, "tool_name")),
        tool_input=as_object(payload.get("tool_input")),
        tool_response=_result(response),
        error=error or "",
        reply=text_field(payload, "prompt_response"),
        transcript=text_field(payload, "transcript_path"),
        cwd=text_field(payload, "cwd"),
    )


def render(event: HookEvent, answer: HookAnswer) -> dict[str, Any]:
    if answer.deny is not None and event.kind is EventKind.PRE_TOOL:
        # The reason goes to the model as the tool's error: "Tool execution blocked: <reason>".
        return {"decision": "deny", "reason": answer.deny}
    if answer.context and event.name in _TAKES_CONTEXT:
        return {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": answer.context}}
    return {}


# Gemini CLI's own tools on the user's files and shell (packages/core/src/tools/tool-names.ts,
# with legacy aliases): guarded by caps only (see ToolKind.WORKSPACE). web_fetch and
# google_web_search are not among them: a repeated fetch is waste, and gets every guard.
WORKSPACE_TOOLS = frozenset(
    {
        "read_file", "read_many_files", "write_file", "replace", "edit", "list_directory", "glob",
        "grep_search", "search_file_content", "run_shell_command", "write_todos", "save_memory",
        "activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode", "get_internal_docs",
        "delegate_to_agent",
    }
)  # fmt: skip

# Of those, the tools that change the user's files: the same command after one of them is a new run.
EDITING_TOOLS = frozenset({"write_file", "replace", "edit"})


def _rewound(records: Records) -> Records:
    # A rewind drops the message it names and everything after it.
    kept: Records = []
    for record in records:
        target = record.get("$rewindTo")
        if target is not None:
            ids = [message.get("id") for message in kept]
            if target in ids:
                del kept[ids.index(target) :]
        elif "id" in record and "type" in record:
            kept.append(record)
    return kept


def _messages(records: Records) -> list[Entry]:
    turns = Turns()
    for record in records:
        text = joined(record.get("content"))
        if not text.strip():
            continue
        if record.get("type") == "user":
            turns.prompt(text)
        elif record.get("type") == "gemini":
            turns.said(text)
    return turns.close()


def transcript_entries(records: Records) -> list[Entry]:
    return _messages(_rewound(records))


def legacy_transcript(data: bytes) -> list[Entry] | None:
    """The entries of the older one-document file, or None when `data` is not one."""
    if not data.lstrip().startswith(b"{"):
        return None
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return None
    messages = document.get("messages") if isinstance(document, dict) else None
    if not isinstance(messages, list):
        return None
    return _messages([record for record in messages if isinstance(record, dict)])


HOST = HostSpec(
    name=NAME,
    title="Gemini CLI",
    protocol=HostProtocol(parse, render, KINDS, WORKSPACE_TOOLS, EDITING_TOOLS),
    # Its only personal settings file is the user's. It deduplicates hooks by name across its
    # settings layers, and its `hooks.disabled` names them.
    settings=HostSettings(".gemini", default_scope=Scope.USER, named_handlers=True),
    transcript=TranscriptFormat(transcript_entries, document=legacy_transcript),
    # Each event carries its `timestamp`.
    dated_events=True,
)
