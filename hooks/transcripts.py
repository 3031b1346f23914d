"""The hosts' own records of a session, read for what the live events missed.

Claude Code writes one JSON object per line (not in its documentation; the shape described by
https://meksys-dev.github.io/mekara/docs/dependencies/claude-cli/jsonl-schema): `user` lines carry
a prompt (`message.content` as a string or text blocks) or tool results (`tool_result` blocks
with `tool_use_id`, `content`, `is_error`); `assistant` lines carry `text` and `tool_use` blocks
(`id`, `name`, `input`). Gemini CLI writes JSON lines of message records (`id`, `type` "user" or
"gemini", `content` as a string or text parts), with `{"$set": ...}` metadata updates and
`{"$rewindTo": id}` rewinds, or, in older versions, one JSON document with a `messages` list
(packages/core/src/services/chatRecordingService.ts in google-gemini/gemini-cli).

A transcript is the host's file, of any size and in any state: it is read from its last
`MAX_BYTES` only, a line that does not parse (or is nested past what the parser takes) is
skipped, and whatever was readable is returned with at most one sentence on what was not. It must
be a regular file (a link to one is followed): a FIFO, a device or a socket named by an event
would hold the hook, and the host, on a read that never ends.
"""

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvm.engine.hosts.host_files import NotRegularFile, open_regular
from memvm.engine.models.pages import Role
from memvm.hooks.events import TranscriptFormat

# What is read of a transcript at most: its end, where what the live events missed is.
MAX_BYTES = 16 * 2**20
# Claude Code's first line after a compaction: its summary of the conversation, not a prompt.
_CONTINUATION = "This session is being continued from a previous conversation"


@dataclass(frozen=True)
class Said:
    """A user prompt or the final reply of a turn."""

    role: Role
    text: str


@dataclass(frozen=True)
class ToolCall:
    """A call the transcript shows with its result."""

    tool_use_id: str
    tool: str
    args: dict[str, Any]
    result: str
    failed: bool


Entry = Said | ToolCall


@dataclass
class Transcript:
    entries: list[Entry] = field(default_factory=list)
    problem: str | None = None  # what could not be read, in one sentence


def read_transcript(path: str, format: TranscriptFormat) -> Transcript:
    """The prompts, final replies and tool calls of the transcript at `path`, in order.

    A missing file reads as empty (the host may not have written it yet).
    """
    try:
        data, truncated = _tail(Path(path).expanduser())
    except FileNotFoundError:
        return Transcript()
    except NotRegularFile:
        return Transcript(problem="the transcript named by the event is not a regular file")
    except OSError:
        return Transcript(problem="the transcript named by the event cannot be read")
    if format is TranscriptFormat.GEMINI_CLI and not truncated:
        document = _document(data)
        if document is not None:
            return Transcript(entries=_gemini(document))
    records, garbled = _records(data, skip_first=truncated)
    entries = _claude(records) if format is TranscriptFormat.CLAUDE_CODE else _gemini(_rewound(records))
    problem = None
    if truncated:
        problem = f"the transcript is over {MAX_BYTES // 2**20} MiB; only its end was read"
    elif garbled:
        problem = f"{garbled} line(s) of the transcript cannot be read and were skipped"
    return Transcript(entries=entries, problem=problem)


def _tail(path: Path) -> tuple[bytes, bool]:
    # A link is followed: hosts' folders are often links (a dotfile manager, a moved home).
    with os.fdopen(open_regular(path, os.O_RDONLY, follow_links=True), "rb") as file:
        size = file.seek(0, 2)
        start = max(0, size - MAX_BYTES)
        file.seek(start)
        return file.read(MAX_BYTES), start > 0


def _document(data: bytes) -> list[dict[str, Any]] | None:
    # The legacy Gemini CLI file: one document whose `messages` are the records.
    if not data.lstrip().startswith(b"{"):
        return None
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return None
    messages = document.get("messages") if isinstance(document, dict) else None
    return [record for record in messages if isinstance(record, dict)] if isinstance(messages, list) else None


def _records(data: bytes, *, skip_first: bool) -> tuple[list[dict[str, Any]], int]:
    lines = data.split(b"\n")
    if skip_first:
        lines = lines[1:]  # the read began inside it
    records: list[dict[str, Any]] = []
    garbled = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser
            garbled += 1
            continue
        if isinstance(record, dict):
            records.append(record)
    return records, garbled


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            # Claude Code's blocks say `type`; Gemini CLI's parts do not, and flag thoughts.
            if not isinstance(block, dict) or block.get("type", "text") != "text" or block.get("thought"):
                continue
            if isinstance(block.get("text"), str):
                yield block["text"]


def _joined(content: Any) -> str:
    return "\n\n".join(text for text in _texts(content) if text.strip())


def _blocks(content: Any, kind: str) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict) and block.get("type") == kind]


class _Turns:
    """Entries in order; a turn's final reply is written when the next prompt (or the end) comes."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.reply = ""
        self.reply_id: Any = None

    def prompt(self, text: str) -> None:
        self.close()
        self.entries.append(Said(Role.USER, text))

    def said(self, text: str, message_id: Any = None) -> None:
        # One reply may be split over several records of the same message id.
        if message_id is not None and message_id == self.reply_id and self.reply:
            self.reply = f"{self.reply}\n\n{text}"
        else:
            self.reply = text
        self.reply_id = message_id

    def close(self) -> list[Entry]:
        if self.reply.strip():
            self.entries.append(Said(Role.ASSISTANT, self.reply))
        self.reply, self.reply_id = "", None
        return self.entries


def _claude(records: list[dict[str, Any]]) -> list[Entry]:
    turns = _Turns()
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
            for use in _blocks(content, "tool_use"):
                if isinstance(use.get("id"), str) and isinstance(use.get("name"), str):
                    args = use.get("input")
                    calls[use["id"]] = (use["name"], args if isinstance(args, dict) else {"input": args})
            if text := _joined([block for block in _blocks(content, "text")]):
                turns.said(text, message.get("id"))
        elif record.get("type") == "user":
            results = _blocks(content, "tool_result")
            for result in results:
                call = calls.pop(str(result.get("tool_use_id")), None)
                if call is not None:
                    turns.entries.append(
                        ToolCall(
                            tool_use_id=str(result["tool_use_id"]),
                            tool=call[0],
                            args=call[1],
                            result=_joined(result.get("content")),
                            failed=result.get("is_error") is True,
                        )
                    )
            text = _joined(content)
            if not results and text.strip() and not text.startswith(_CONTINUATION):
                turns.prompt(text)
    return turns.close()


def _rewound(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A rewind drops the message it names and everything after it.
    kept: list[dict[str, Any]] = []
    for record in records:
        target = record.get("$rewindTo")
        if target is not None:
            ids = [message.get("id") for message in kept]
            if target in ids:
                del kept[ids.index(target) :]
        elif "id" in record and "type" in record:
            kept.append(record)
    return kept


def _gemini(records: list[dict[str, Any]]) -> list[Entry]:
    turns = _Turns()
    for record in records:
        text = _joined(record.get("content"))
        if not text.strip():
            continue
        if record.get("type") == "user":
            turns.prompt(text)
        elif record.get("type") == "gemini":
            turns.said(text)
    return turns.close()
