"""Writing imported conversations: each one a session of dated transcript pages.

The formats (chatgpt, claude) read their exports into `Conversation`s; this writes them through
the engine, one write transaction per conversation, so that a run stopped midway leaves whole
conversations behind and the next run completes the rest.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvm.engine import Engine
from memvm.engine.errors import InvalidArgument
from memvm.engine.operations.importers.counts import Counted, ImportCounts
from memvm.engine.operations.importers.keys import SESSION_CHARS, digest, name_for
from memvm.engine.operations.importers.sources import epoch_seconds, read_json
from memvm.engine.operations.transfer import TransferError
from memvm.engine.paging.history_write import HistoryMessage


@dataclass(frozen=True)
class Conversation:
    session: str
    title: str | None
    messages: list[HistoryMessage]


def read_export(
    path: Path, product: str, conversation: Callable[[str, Any], Conversation]
) -> list[Conversation]:
    """The conversations of an assistant's export: a JSON array, each item read by `conversation`
    (given where the item is, for its errors)."""
    export = read_json(path, f"{product}'s conversations.json, one JSON array")
    if not isinstance(export, list):
        raise TransferError(f"{path} is not a {product} export: it holds no array of conversations")
    return [
        conversation(f"{path}: conversation {number}", item) for number, item in enumerate(export, start=1)
    ]


# Reads one message of an export (given the date before it and where it is), or None for one
# that is not conversation.
MessageReader = Callable[[Any, float | None, str], HistoryMessage | None]


def conversation(
    source: str,
    ident: Any,
    title: str | None,
    started: float | None,
    entries: Iterable[tuple[str, Any]],
    read: MessageReader,
) -> Conversation:
    """A conversation of `source` from its `entries` (where each is, and the message as exported)."""
    # An export always names its conversations; without an id, the title and start stand in.
    name = str(ident) if ident else digest(f"{title}\n{started}")
    messages: list[HistoryMessage] = []
    before = started
    for where, entry in entries:
        message = read(entry, before, where)
        if message is not None:
            messages.append(message)
            before = message.created_at
    return Conversation(
        session=name_for(f"{source}-", name, SESSION_CHARS), title=title or None, messages=messages
    )


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
    for talk in conversations:
        counts.conversations += 1
        counts.messages += len(talk.messages)
        if not talk.messages:
            continue
        try:
            written = await engine.write_history(
                namespace=namespace,
                session=talk.session,
                source=source,
                title=talk.title,
                messages=talk.messages,
            )
        except InvalidArgument as exc:  # a message over the page limit: say which conversation
            raise TransferError(f"conversation {talk.session}: {exc}") from exc
        counts.already_there += written.already_there
    return counts
