"""The formats `memvm import` reads besides its own export, and which module reads each.

An import reads and checks the whole source first (`read_source`), and only then opens the
database and writes: a file of the wrong format, or malformed, changes nothing, not even by
creating an empty database.
"""

from collections.abc import Awaitable, Callable
from enum import StrEnum
from functools import partial
from pathlib import Path

from memvm.engine import Engine
from memvm.engine.operations.importers import chatgpt, claude, markdown_notes, server_memory
from memvm.engine.operations.importers.conversations import Conversation, write_conversations
from memvm.engine.operations.importers.counts import ImportCounts

# What is left to do once the source is read: write it into a namespace.
Writing = Callable[[Engine, str], Awaitable[ImportCounts]]


class ImportFormat(StrEnum):
    JSONL = "jsonl"  # memvm's own export: see operations/transfer.py
    SERVER_MEMORY = "server-memory"
    CHATGPT = "chatgpt"
    CLAUDE = "claude"
    MARKDOWN = "markdown"


def read_source(source: ImportFormat, path: Path) -> Writing:
    """Read and check the file (or folder) at `path`; returns what writes it."""
    match source:
        case ImportFormat.SERVER_MEMORY:
            entities, relations = server_memory.read_graph(path)
            return lambda engine, namespace: server_memory.write_graph(
                engine, namespace=namespace, entities=entities, relations=relations
            )
        case ImportFormat.MARKDOWN:
            notes = markdown_notes.read_notes(path)
            return lambda engine, namespace: markdown_notes.write_notes(
                engine, namespace=namespace, notes=notes
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
