"""Claude Code transcript files (`transcript_path`, one JSON object per line), written the way
they are described outside Anthropic's documentation, which does not cover them:
https://meksys-dev.github.io/mekara/docs/dependencies/claude-cli/jsonl-schema and
https://evilpiepirate.org/forge/kent/consciousness/raw/commit/7ecc50d2e4f890d11da0dcfa11231a4a6afb7ebb/doc/claude-code-transcript-format.md
(line types `user`, `assistant`, `summary`, `progress`, `file-history-snapshot`; `message.content`
as a string or blocks `text`, `thinking`, `tool_use` {id, name, input}, `tool_result`
{tool_use_id, content, is_error}; `isMeta` and `isCompactSummary` flags; a compacted session's
first prompt begins "This session is being continued from a previous conversation")."""

import json
from pathlib import Path
from typing import Any

from tests.hooks.claude_code_events import SESSION

_uuids = iter(range(1, 10**9))


def _line(kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    uuid = f"u{next(_uuids)}"
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": None,
        "sessionId": SESSION,
        "timestamp": "2026-02-01T14:59:02.592Z",
        "cwd": "/home/user/my-project",
        "version": "2.1.200",
        "gitBranch": "main",
        "message": message,
        **extra,
    }


def prompt(text: str, **extra: Any) -> dict[str, Any]:
    return _line("user", {"role": "user", "content": text}, **extra)


def prompt_blocks(*texts: str) -> dict[str, Any]:
    return _line("user", {"role": "user", "content": [{"type": "text", "text": t} for t in texts]})


def assistant(
    *blocks: dict[str, Any], stop_reason: str = "end_turn", message_id: str | None = None
) -> dict[str, Any]:
    message = {
        "id": message_id or f"msg_{next(_uuids)}",
        "role": "assistant",
        "model": "claude-opus-5",
        "content": list(blocks),
        "stop_reason": stop_reason,
    }
    return _line("assistant", message)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value}


def tool_use(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def tool_result(tool_use_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}
    return _line("user", {"role": "user", "content": [block]}, toolUseResult={"stdout": "…"})


def meta_lines() -> list[dict[str, Any]]:
    """Lines that are not the user's conversation: summaries, progress, snapshots, meta prompts."""
    return [
        {"type": "summary", "summary": "Deploy script discussion", "leafUuid": "u1"},
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        {"type": "progress", "data": {"type": "hook_progress"}},
        prompt("<local-command-stdout>compacted</local-command-stdout>", isMeta=True),
        prompt("Summary of the conversation so far: the deploy script was found.", isCompactSummary=True),
        prompt("This session is being continued from a previous conversation that ran out of context."),
    ]


def write(path: Path, lines: list[Any]) -> Path:
    """The lines as JSON lines; a `bytes` item is written as it is (a garbled line)."""
    with path.open("wb") as file:
        for line in lines:
            file.write(line if isinstance(line, bytes) else json.dumps(line).encode())
            file.write(b"\n")
    return path
