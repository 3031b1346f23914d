"""The formats `memvm import` reads besides its own export, and which module reads each.

An import reads and checks the whole source first (`read_source`), and only then opens the
database and writes: a file of the wrong format, or malformed, changes nothing, not even by
creating an empty database. A file refused for the format named is looked at once more
(`looks_like`): when its first bytes are another format's, the refusal says which `--format` to add.
"""

import re
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

from memvm.engine import Engine
from memvm.engine.operations.importers import ImportFormat, chatgpt, claude, markdown_notes, server_memory
from memvm.engine.operations.importers.conversations import Conversation, write_conversations
from memvm.engine.operations.importers.counts import ImportCounts
from memvm.engine.operations.transfer import TransferError

# What is left to do once the source is read: write it into a namespace.
Writing = Callable[[Engine, str], Awaitable[ImportCounts]]


def read_source(source: ImportFormat, path: Path) -> Writing:
    """Read and check the file (or folder) at `path`; returns what writes it."""
    try:
        return _read_source(source, path)
    except TransferError as exc:
        raise TransferError(with_hint(str(exc), source, path)) from exc


def with_hint(refusal: str, source: ImportFormat, path: Path) -> str:
    """`refusal`, and which --format to add when the file looks like another format's."""
    guess = looks_like(path)
    if guess is None or guess is source:
        return refusal
    return f"{refusal}; this looks like {_DESCRIBED[guess]}: add --format {guess.value}"


def check_memvm_export(path: Path) -> None:
    """Refuse, before any database is opened or created, a file whose first line is not memvm's
    export header, saying which --format it looks like."""
    if looks_like(path) is not ImportFormat.JSONL:
        refusal = f"{path} is not a memvm export (its first line is no memvm-export header)"
        raise TransferError(with_hint(refusal, ImportFormat.JSONL, path))


_DESCRIBED = {
    ImportFormat.JSONL: "memvm's own export",
    ImportFormat.SERVER_MEMORY: "the MCP memory server's memory.json",
    ImportFormat.CHATGPT: "a ChatGPT export",
    ImportFormat.CLAUDE: "a Claude export",
    ImportFormat.MARKDOWN: "a folder of notes",
}
_SNIFF_BYTES = 64 * 1024


def looks_like(path: Path) -> ImportFormat | None:
    """The format the first bytes of `path` suggest, or None when they suggest none."""
    if path.is_dir():
        return ImportFormat.MARKDOWN
    if path.suffix.lower() == ".md":
        return ImportFormat.MARKDOWN
    try:
        with open(path, "rb") as stream:
            head = stream.read(_SNIFF_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return None
    compact = re.sub(r"\s+", "", head)
    if head.startswith("{") and '"format":"memvm-export"' in re.sub(r"\s+", "", head.split("\n", 1)[0]):
        return ImportFormat.JSONL
    if head.startswith("{") and re.match(r'\{.*"type":"(entity|relation)"', compact):
        return ImportFormat.SERVER_MEMORY
    if head.startswith("["):
        if '"mapping":' in compact:
            return ImportFormat.CHATGPT
        if '"chat_messages":' in compact:
            return ImportFormat.CLAUDE
    return None


def _read_source(source: ImportFormat, path: Path) -> Writing:
    match source:
        case ImportFormat.SERVER_MEMORY:
            entities, relations = server_memory.read_graph(path)
            return lambda engine, namespace: server_memory.write_graph(
                engine, namespace=namespace, entities=entities, relations=relations
            )
        case ImportFormat.MARKDOWN:
            folder = markdown_notes.read_notes(path)
            return lambda engine, namespace: markdown_notes.write_notes_of(
                engine, namespace=namespace, folder=folder
            )
        case ImportFormat.CHATGPT:
            return partial(_conversations, chatgpt.SOURCE, chatgpt.read_conversations(path))
        case ImportFormat.CLAUDE:
            return partial(_conversations, claude.SOURCE, claude.read_conversations(path))
        case ImportFormat.JSONL:
            raise ValueError("memvm's own export fills an empty database: operations.transfer imports it")


async def _conversations(
    source: str, conversations: list[Conversation], engine: Engine, namespace: str
) -> ImportCounts:
    return await write_conversations(engine, namespace=namespace, source=source, conversations=conversations)
