"""Gemini CLI hook events in the documented shape: https://geminicli.com/docs/hooks/reference
(with https://geminicli.com/docs/hooks/ for the common input fields and the example values:
"Common input fields", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionStart",
"PreCompress", "Notification", "SessionEnd"). AfterTool's `tool_response` is the reference's object
`{llmContent, returnDisplay, error?}`; a failed call carries `error` `{message, type}`. An MCP tool
is named by its server and its own name (`mcp_linear_list_issues`), and its `llmContent` is the
text content as parts (`[{"text": ...}]`), as packages/core/src/tools/mcp-tool.ts gives it."""

from typing import Any

SESSION = "abc123"
_COMMON = {
    "session_id": SESSION,
    "transcript_path": "/path/to/transcript.jsonl",
    "cwd": "/path/to/project",
    "timestamp": "2025-12-01T10:30:00Z",
}


def before_agent(prompt: str) -> dict[str, Any]:
    return {**_COMMON, "hook_event_name": "BeforeAgent", "prompt": prompt}


def before_tool(tool_input: dict[str, Any], tool: str = "run_shell_command") -> dict[str, Any]:
    return {**_COMMON, "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": tool_input}


def after_tool(
    tool_input: dict[str, Any],
    output: str,
    error: dict[str, str] | None = None,
    tool: str = "run_shell_command",
) -> dict[str, Any]:
    response: dict[str, Any] = {"llmContent": output, "returnDisplay": output}
    if error is not None:
        response["error"] = error
    return {
        **_COMMON,
        "hook_event_name": "AfterTool",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
    }


def after_mcp_tool(tool_input: dict[str, Any], text: str, tool: str) -> dict[str, Any]:
    """An MCP tool's AfterTool: its text content as the parts the model was given."""
    return {
        **after_tool(tool_input, text, tool=tool),
        "tool_response": {"llmContent": [{"text": text}], "returnDisplay": text},
    }


def after_agent(prompt: str, reply: str) -> dict[str, Any]:
    return {
        **_COMMON,
        "hook_event_name": "AfterAgent",
        "prompt": prompt,
        "prompt_response": reply,
        "stop_hook_active": False,
    }


def session_start(**extra: Any) -> dict[str, Any]:
    return {**_COMMON, "hook_event_name": "SessionStart", "source": "startup", **extra}


def pre_compress(transcript_path: str, **extra: Any) -> dict[str, Any]:
    return {
        **_COMMON,
        "transcript_path": transcript_path,
        "hook_event_name": "PreCompress",
        "trigger": "auto",
        **extra,
    }


def session_end(transcript_path: str, **extra: Any) -> dict[str, Any]:
    return {
        **_COMMON,
        "transcript_path": transcript_path,
        "hook_event_name": "SessionEnd",
        "reason": "exit",
        **extra,
    }


def lifecycle() -> list[dict[str, Any]]:
    """The lifecycle events, which memvm answers with nothing."""
    return [
        {**_COMMON, "hook_event_name": "SessionStart", "source": "startup"},
        {**_COMMON, "hook_event_name": "PreCompress", "trigger": "auto"},
        {
            **_COMMON,
            "hook_event_name": "Notification",
            "notification_type": "ToolPermission",
            "message": "string",
            "details": {},
        },
        {**_COMMON, "hook_event_name": "SessionEnd", "reason": "exit"},
    ]


def model_events() -> list[dict[str, Any]]:
    """BeforeModel, BeforeToolSelection and AfterModel (`llm_request`, `llm_response`), which memvm
    answers with nothing."""
    request = {
        "model": "gemini-2.5-pro",
        "messages": [{"role": "user", "content": "Fix the authentication bug"}],
        "config": {},
        "toolConfig": {},
    }
    return [
        {**_COMMON, "hook_event_name": "BeforeModel", "llm_request": request},
        {**_COMMON, "hook_event_name": "BeforeToolSelection", "llm_request": request},
        {
            **_COMMON,
            "hook_event_name": "AfterModel",
            "llm_request": request,
            "llm_response": {"candidates": [{"content": {"role": "model", "parts": ["Looking."]}}]},
        },
    ]
