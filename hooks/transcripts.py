"""The hosts' own records of a session, read for what the live events missed.

Each host writes its own shape; its module says how it reads (a `TranscriptFormat`: its JSON lines'
records to prompts, final replies and tool calls, and any one-document form it writes instead).
What is common is here: a transcript is the host's file, of any size and in any state: it is read
from its last `MAX_BYTES` only, a line that does not parse (or is nested past what the parser
takes) is skipped, and whatever was readable is returned with at most one sentence on what was
not. It must be a regular file (a link to one is followed): a FIFO, a device or a socket named by
an event would hold the hook, and the host, on a read that never ends.

Light on purpose (the standard library and the engine's file checks): the hook's client loads
every host, and with it this module.
"""

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvm.engine.hosts.host_files import NotRegularFile, open_regular

# What is read of a transcript at most: its end, where what the live events missed is.
MAX_BYTES = 16 * 2**20


@dataclass(frozen=True)
class Prompt:
    """A prompt the user sent."""

    text: str


@dataclass(frozen=True)
class Reply:
    """The final reply of a turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """A call the transcript shows with its result."""

    tool_use_id: str
    tool: str
    args: dict[str, Any]
    result: str
    failed: bool


Entry = Prompt | Reply | ToolCall
Records = list[dict[str, Any]]


def _no_document(data: bytes) -> list[Entry] | None:
    return None


@dataclass(frozen=True)
class TranscriptFormat:
    """How one host's transcript reads."""

    # The file's JSON lines, as objects in order, to the entries they hold.
    entries: Callable[[Records], list[Entry]]
    # The entries of a whole file the host wrote as one JSON document instead of lines, or None
    # when the file is not one.
    document: Callable[[bytes], list[Entry] | None] = _no_document


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
    if not truncated:
        document = format.document(data)
        if document is not None:
            return Transcript(entries=document)
    records, garbled = _records(data, skip_first=truncated)
    entries = format.entries(records)
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


def _records(data: bytes, *, skip_first: bool) -> tuple[Records, int]:
    lines = data.split(b"\n")
    if skip_first:
        lines = lines[1:]  # the read began inside it
    records: Records = []
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


def joined(content: Any) -> str:
    """The text of a message's content (a string, or a list of text blocks), thoughts left out."""
    return "\n\n".join(text for text in _texts(content) if text.strip())


def blocks(content: Any, kind: str) -> list[dict[str, Any]]:
    """The blocks of `content` whose `type` is `kind`."""
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict) and block.get("type") == kind]


class Turns:
    """Entries in order; a turn's final reply is written when the next prompt (or the end) comes."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.reply = ""
        self.reply_id: Any = None

    def prompt(self, text: str) -> None:
        self.close()
        self.entries.append(Prompt(text))

    def said(self, text: str, message_id: Any = None) -> None:
        # One reply may be split over several records of the same message id.
        if message_id is not None and message_id == self.reply_id and self.reply:
            self.reply = f"{self.reply}\n\n{text}"
        else:
            self.reply = text
        self.reply_id = message_id

    def close(self) -> list[Entry]:
        if self.reply.strip():
            self.entries.append(Reply(self.reply))
        self.reply, self.reply_id = "", None
        return self.entries
