"""Writing imported conversations: each one a session of dated transcript pages.

The formats (chatgpt, claude) read their exports into `Conversation`s; this checks every message
before anything is written (one over the page limit is left out, with a warning that names it) and
writes them through the engine, which stores a long conversation in bounded transactions, so that
a run stopped midway leaves whole batches behind and the next run completes the rest.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvm.engine import Engine
from memvm.engine.operations.importers.counts import Counted, ImportCounts
from memvm.engine.operations.importers.keys import SESSION_CHARS, digest, name_for
from memvm.engine.operations.importers.notes import over_the_limit, too_long
from memvm.engine.operations.importers.source_format import FirstBytes, ImportSource, Writing
from memvm.engine.operations.importers.sources import epoch_seconds, read_json
from memvm.engine.operations.transfer import TransferError
from memvm.engine.paging.history_write import HistoryMessage


@dataclass(frozen=True)
class Conversation:
    session: str
    title: str | None
    messages: list[HistoryMessage]
    where: str  # the file and the conversation's place in it
    # Where each message is (by source id), for a warning that names it.
    places: dict[str, str]


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


def text_or_none(item: dict[str, Any], name: str, where: str) -> str | None:
    """The field `name` of `item` when it is text; None when absent; refused when anything else."""
    value = item.get(name)
    if value is None or isinstance(value, str):
        return value or None
    raise TransferError(f'{where}: "{name}" is not text')


def conversation(
    where: str,
    source: str,
    ident: str | None,
    title: str | None,
    started: float | None,
    entries: Iterable[tuple[str, Any]],
    read: MessageReader,
) -> Conversation:
    """A conversation of `source` from its `entries` (where each is, and the message as exported)."""
    # An export always names its conversations; without an id, the title and start stand in.
    name = ident if ident else digest(f"{title}\n{started}")
    messages: list[HistoryMessage] = []
    places: dict[str, str] = {}
    before = started
    said: dict[str, set[str]] = {}
    for at, entry in entries:
        message = read(entry, before, at)
        if message is not None:
            message = _own_id(message, said)
            messages.append(message)
            places.setdefault(message.source_id, at)
            before = message.created_at
    return Conversation(
        session=name_for(f"{source}-", name, SESSION_CHARS),
        title=title or None,
        messages=messages,
        where=where,
        places=places,
    )


def _own_id(message: HistoryMessage, said: dict[str, set[str]]) -> HistoryMessage:
    """The message, under an id of its own when an earlier message of the conversation used its id
    for other text (`id#2`, `id#3`…, the same on every import of the file); the same text under the
    same id is the same message, stored once."""
    texts = said.setdefault(message.source_id, set())
    if not texts or message.content in texts:
        texts.add(message.content)
        return message
    texts.add(message.content)
    return message.model_copy(update={"source_id": f"{message.source_id}#{len(texts)}"})


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
    checked: list[tuple[Conversation, list[HistoryMessage]]] = []
    for talk in conversations:
        counts.conversations += 1
        counts.messages += len(talk.messages)
        kept = []
        for message in talk.messages:
            if (over := await too_long(engine, message.content)) is not None:
                counts.skip(over_the_limit(talk.places[message.source_id], over))
            else:
                kept.append(message)
        checked.append((talk, kept))
    for talk, kept in checked:
        if not kept:
            continue
        written = await engine.session(namespace, talk.session).write_history(
            source=source, title=talk.title, messages=kept
        )
        counts.already_there += written.already_there
    return counts


def conversation_format(
    source: str, described: str, marker: str, read: Callable[[Path], list[Conversation]]
) -> ImportSource:
    """The format of a conversations export: a JSON array whose conversations hold `marker`."""

    def looks_like(start: FirstBytes) -> bool:
        return start.head.startswith("[") and marker in start.compact

    def read_source(path: Path) -> Writing:
        conversations = read(path)

        async def write(engine: Engine, namespace: str) -> ImportCounts:
            return await write_conversations(
                engine, namespace=namespace, source=source, conversations=conversations
            )

        return write

    return ImportSource(name=source, described=described, looks_like=looks_like, read=read_source)
