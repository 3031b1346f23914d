"""Gemini CLI session files (`transcript_path`), written in the shapes of
packages/core/src/services/chatRecordingService.ts in google-gemini/gemini-cli: JSON lines (a
metadata record `{sessionId, projectHash, startTime, lastUpdated}`, message records `{id,
timestamp, type: "user" | "gemini" | "info", content}` with `content` a string or text parts,
`{"$set": {...}}` updates and `{"$rewindTo": id}` rewinds), and the older single JSON document
`{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`."""

import json
from pathlib import Path
from typing import Any

from tests.hooks.gemini_cli_events import SESSION

_METADATA = {
    "sessionId": SESSION,
    "projectHash": "be36a1c0",
    "startTime": "2025-12-01T10:30:00Z",
    "lastUpdated": "2025-12-01T10:31:00Z",
}


def user(message_id: str, text: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "timestamp": "2025-12-01T10:30:01Z",
        "type": "user",
        "content": [{"text": text}],
    }


def gemini(message_id: str, text: str, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": message_id,
        "timestamp": "2025-12-01T10:30:02Z",
        "type": "gemini",
        "content": text,
        "model": "gemini-2.5-pro",
    }
    if tool_calls is not None:
        record["toolCalls"] = tool_calls
    return record


def info(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "timestamp": "2025-12-01T10:30:03Z", "type": "info", "content": text}


def updated() -> dict[str, Any]:
    return {"$set": {"lastUpdated": "2025-12-01T10:32:00Z"}}


def rewind_to(message_id: str) -> dict[str, Any]:
    return {"$rewindTo": message_id}


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in [_METADATA, *records]))
    return path


def write_legacy(path: Path, messages: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({**_METADATA, "messages": messages}, indent=2))
    return path
