"""Gemini CLI's hook protocol: https://geminicli.com/docs/hooks/reference

Each event arrives as one JSON object on stdin (common fields `session_id`, `transcript_path`,
`cwd`, `hook_event_name`, `timestamp`); the answer is one JSON object on stdout with exit code 0,
the form the reference prefers for all logic. Exit code 2 would block, so memvm never uses it: a
deny is `{"decision": "deny", "reason": ...}`, and context is `additionalContext` in
`hookSpecificOutput`, which only SessionStart, BeforeAgent and AfterTool take.
"""

import json
from typing import Any

from memvm.hooks.events import (
    EventKind,
    HookAnswer,
    HookEvent,
    Host,
    TranscriptFormat,
    TranscriptSource,
    as_object,
    event_digest,
    known_event,
    session_name,
    text_field,
    tool_name,
)

KINDS = {
    "BeforeAgent": EventKind.PROMPT,
    "BeforeTool": EventKind.PRE_TOOL,
    "AfterTool": EventKind.TOOL_DONE,
    "AfterAgent": EventKind.REPLY,
    "SessionStart": EventKind.SESSION_START,
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
    path = text_field(payload, "transcript_path")
    return HookEvent(
        kind=EventKind.TOOL_FAILED if error is not None else kind,
        name=name,
        session=session_name(payload.get("session_id"), Host.GEMINI_CLI),
        digest=event_digest(Host.GEMINI_CLI, payload),
        prompt=text_field(payload, "prompt") if kind is EventKind.PROMPT else "",
        tool=tool_name(text_field(payload, "tool_name")),
        tool_input=as_object(payload.get("tool_input")),
        tool_response=_result(response),
        error=error or "",
        reply=text_field(payload, "prompt_response"),
        transcript=TranscriptSource(path, TranscriptFormat.GEMINI_CLI) if path else None,
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
