"""Claude Code hook events in the documented shape: https://code.claude.com/docs/en/hooks
(sections "Common input fields", "UserPromptSubmit", "PreToolUse", "PostToolUse",
"PostToolUseFailure", "Stop", "SessionStart", "PreCompact", "SessionEnd"; field names and example values from there)."""

from typing import Any

SESSION = "abc123"
_COMMON = {
    "session_id": SESSION,
    "transcript_path": "/home/user/.claude/projects/my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
    "cwd": "/home/user/my-project",
    "permission_mode": "default",
}


def prompt(text: str, **extra: Any) -> dict[str, Any]:
    return {**_COMMON, "hook_event_name": "UserPromptSubmit", "prompt": text, **extra}


def pre_tool(tool_input: dict[str, Any], tool_use_id: str, tool: str = "Bash") -> dict[str, Any]:
    return {
        **_COMMON,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
    }


def post_tool(
    tool_input: dict[str, Any], tool_response: Any, tool_use_id: str, tool: str = "Bash"
) -> dict[str, Any]:
    return {
        **_COMMON,
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": tool_response,
        "tool_use_id": tool_use_id,
        "duration_ms": 12,
    }


def tool_failure(
    tool_input: dict[str, Any], error: str, tool_use_id: str, tool: str = "Bash"
) -> dict[str, Any]:
    return {
        **_COMMON,
        "hook_event_name": "PostToolUseFailure",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
        "error": error,
        "is_interrupt": False,
        "duration_ms": 4187,
    }


def stop(reply: str) -> dict[str, Any]:
    return {
        **_COMMON,
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": reply,
        "background_tasks": [],
        "session_crons": [],
    }


def session_start(source: str = "startup", **extra: Any) -> dict[str, Any]:
    return {**_COMMON, "hook_event_name": "SessionStart", "source": source, "model": "claude-opus-5", **extra}


def pre_compact(transcript_path: str, **extra: Any) -> dict[str, Any]:
    return {
        **_COMMON,
        "transcript_path": transcript_path,
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": None,
        **extra,
    }


def session_end(transcript_path: str | None = None, **extra: Any) -> dict[str, Any]:
    path = {"transcript_path": transcript_path} if transcript_path is not None else {}
    return {**_COMMON, **path, "hook_event_name": "SessionEnd", "reason": "other", **extra}


def others() -> list[dict[str, Any]]:
    """Documented events memvm has nothing to do for ("Notification", "SubagentStop", "PostCompact",
    "PermissionRequest" in the reference)."""
    return [
        {
            **_COMMON,
            "hook_event_name": "Notification",
            "message": "Claude needs your permission to use Bash",
            "title": "Permission needed",
            "notification_type": "permission_prompt",
        },
        {
            **_COMMON,
            "hook_event_name": "SubagentStop",
            "stop_hook_active": False,
            "agent_id": "agent-1",
            "agent_type": "Explore",
            "agent_transcript_path": "/home/user/.claude/projects/my-project/agent-1.jsonl",
            "last_assistant_message": "Found 3 call sites.",
        },
        {
            **_COMMON,
            "hook_event_name": "PostCompact",
            "trigger": "auto",
            "compact_summary": "The deploy script...",
        },
        {
            **_COMMON,
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf node_modules"},
            "permission_suggestions": [],
        },
    ]
