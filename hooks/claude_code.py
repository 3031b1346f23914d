"""Claude Code as a host: its hook protocol (https://code.claude.com/docs/en/hooks), its settings
file and its transcript.

Each event arrives as one JSON object on stdin (common fields `session_id`, `transcript_path`,
`cwd`, `hook_event_name`); the answer is one JSON object on stdout with exit code 0. Exit code 2
would block, so memvm never uses it: a deny is `permissionDecision` "deny" in
`hookSpecificOutput`, and context is `additionalContext`.

The transcript is one JSON object per line (not in its documentation; the shape described by
https://meksys-dev.github.io/mekara/docs/dependencies/claude-cli/jsonl-schema): `user` lines carry
a prompt (`message.content` as a string or text blocks) or tool results (`tool_result` blocks
with `tool_use_id`, `content`, `is_error`); `assistant` lines carry `text` and `tool_use` blocks
(`id`, `name`, `input`).
"""

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
    tool_result_digest,
)
from memvm.hooks.host_spec import HostProtocol, HostSettings, HostSpec, Scope
from memvm.hooks.transcripts import Entry, Records, ToolCall, TranscriptFormat, Turns, blocks, joined

NAME = "claude-code"

KINDS = {
    "SessionStart": EventKind.SESSION_START,
    "UserPromptSubmit": EventKind.PROMPT,
    "PreToolUse": EventKind.PRE_TOOL,
    "PostToolUse": EventKind.TOOL_DONE,
    "PostToolUseFailure": EventKind.TOOL_FAILED,
    "Stop": EventKind.REPLY,
    # Before the conversation is summarised away, and when it ends: read what the hooks missed.
    "PreCompact": EventKind.CATCH_UP,
    "SessionEnd": EventKind.CATCH_UP,
    # Documented events memvm has nothing to do for (yet): answered with nothing, quietly.
    "PostCompact": EventKind.IGNORED,
    "Notification": EventKind.IGNORED,
    "SubagentStop": EventKind.IGNORED,
    "PermissionRequest": EventKind.IGNORED,
}

# Events whose `hookSpecificOutput` takes `additionalContext` (the reference's "Add context" list).
_TAKES_CONTEXT = {"UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "SessionStart"}


def parse(payload: Any) -> HookEvent:
    payload, name, kind = known_event(payload, KINDS)
    response = payload.get("tool_response")
    # Failures arrive as PostToolUseFailure; a response flagged is_error is taken as one too.
    if kind is EventKind.TOOL_DONE and isinstance(response, dict) and response.get("is_error") is True:
        kind = EventKind.TOOL_FAILED
    duration = payload.get("duration_ms")
    session = session_name(payload.get("session_id"), NAME)
    tool_use_id = text_field(payload, "tool_use_id")
    # A call's result is one fact whichever way it arrives (the event, a replay, the transcript).
    if kind in (EventKind.TOOL_DONE, EventKind.TOOL_FAILED) and tool_use_id:
        digest = tool_result_digest(session, tool_use_id)
    else:
        digest = event_digest(NAME, payload)
    return HookEvent(
        kind=kind,
        name=name,
        session=session,
        digest=digest,
        prompt=text_field(payload, "prompt"),
        tool=tool_name(text_field(payload, "tool_name")),
        tool_input=as_object(payload.get("tool_input")),
        tool_response=response,
        error=text_field(payload, "error"),
        duration_ms=float(duration) if isinstance(duration, int | float) else None,
        reply=text_field(payload, "last_assistant_message"),
        tool_use_id=tool_use_id,
        transcript=text_field(payload, "transcript_path"),
        interrupted=payload.get("is_interrupt") is True,
        cwd=text_field(payload, "cwd"),
    )


def render(event: HookEvent, answer: HookAnswer) -> dict[str, Any]:
    if answer.deny is not None and event.kind is EventKind.PRE_TOOL:
        return {
            "hookSpecificOutput": {
                "hookEventName": event.name,
                "permissionDecision": "deny",
                "permissionDecisionReason": answer.deny,
            }
        }
    # No permissionDecision on a warning: "allow" would also skip the user's permission prompt.
    if answer.context and event.name in _TAKES_CONTEXT:
        return {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": answer.context}}
    return {}


# Claude Code's own tools on the user's files and shell (https://code.claude.com/docs/en/tools-reference,
# with names of earlier versions): guarded by caps only (see ToolKind.WORKSPACE). WebFetch and
# WebSearch are not among them: a repeated fetch is waste, and gets every guard.
WORKSPACE_TOOLS = frozenset(
    {
        "Bash", "BashOutput", "KillShell", "PowerShell", "Read", "Write", "Edit", "MultiEdit",
        "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS", "Agent", "Task", "Workflow",
        "TaskCreate", "TaskUpdate", "TodoWrite", "TodoRead", "AskUserQuestion", "ExitPlanMode",
        "SubagentHandback", "Skill", "SlashCommand",
    }
)  # fmt: skip

# Of those, the tools that change the user's files: the same command after one of them is a new run.
EDITING_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


# The first line after a compaction: Claude Code's summary of the conversation, not a prompt.
_CONTINUATION = "This session is being continued from a previous conversation"


def transcript_entries(records: Records) -> list[Entry]:
    turns = Turns()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for record in records:
        # Meta lines (command output, compaction summaries) and subagents' lines are not the
        # conversation the user had.
        if record.get("isMeta") or record.get("isCompactSummary") or record.get("isSidechain"):
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if record.get("type") == "assistant":
            for use in blocks(content, "tool_use"):
                if isinstance(use.get("id"), str) and isinstance(use.get("name"), str):
                    args = use.get("input")
                    calls[use["id"]] = (use["name"], args if isinstance(args, dict) else {"input": args})
            if text := joined(blocks(content, "text")):
                turns.said(text, message.get("id"))
        elif record.get("type") == "user":
            results = blocks(content, "tool_result")
            for result in results:
                call = calls.pop(str(result.get("tool_use_id")), None)
                if call is not None:
                    turns.entries.append(
                        ToolCall(
                            tool_use_id=str(result["tool_use_id"]),
                            tool=call[0],
                            args=call[1],
                            result=joined(result.get("content")),
                            failed=result.get("is_error") is True,
                        )
                    )
            text = joined(content)
            if not results and text.strip() and not text.startswith(_CONTINUATION):
                turns.prompt(text)
    return turns.close()


HOST = HostSpec(
    name=NAME,
    title="Claude Code",
    protocol=HostProtocol(parse, render, KINDS, WORKSPACE_TOOLS, EDITING_TOOLS),
    # By default in its per-project personal file, which it keeps out of version control itself.
    # SessionEnd hooks share 1.5 s unless a handler asks for more (seconds): the catch-up reads the
    # whole transcript.
    settings=HostSettings(".claude", default_scope=Scope.LOCAL, local_file=True, timeouts={"SessionEnd": 15}),
    transcript=TranscriptFormat(transcript_entries),
    # A prompt or a final reply carries no id and no time ("continue" typed twice).
    dated_events=False,
)
