"""Writing imported conversations: each one a session of dated transcript pages.

The formats (chatgpt, claude) read their exports into `Conversation`s; this writes them through
the engine, one write transaction per conversation, so that a run stopped midway leaves whole
conversations behind and the next run completes the rest.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvm.engine import Engine
from memvm.engine.operations.importers.counts import Counted, ImportCounts
from memvm.engine.operations.importers.sources import epoch_seconds, read_json
from memvm.engine.operations.transfer import TransferError
from memvm.engine.paging.history_write import HistoryMessage


@dataclass(frozen=True)
class Conversation:
    session: str
    title: str | None
    messages: list[HistoryMessage]


def exported_conversations(path: Path, product: str) -> list[Any]:
    """The array of conversations an assistant's export holds."""
    export = read_json(path, f"{product}'s conversations.json, one JSON array")
    if not isinstance(export, list):
        raise TransferError(f"{path} is not a {product} export: it holds no array of conversations")
    return export


def message_date(value: Any, before: float | None, where: str) -> float:
    """A message's date; when it has none, the date of what came `before` it (the message before,
    else the conversation), which keeps it in its place."""
    created = epoch_seconds(value, where) or before
    if created is None:
        raise TransferError(f"{where} has no date, nor has its conversation")
    return created


async def write_conversations(
    engine: Engine, *, namespace: str, source: str, conversations: Iterable[Conversation]
) -> ImportCounts:
    counts = ImportCounts(Counted.CONVERSATIONS)
    for conversation in conversations:
        counts.conversations += 1
        counts.messages += len(conversation.messages)
        if not conversation.messages:
            continue
        written = await engine.write_history(
            namespace=namespace,
            session=conversation.session,
            source=source,
            title=conversation.title,
            messages=conversation.messages,
        )
        counts.already_there += written.already_there
    return counts
