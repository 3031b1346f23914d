"""Claude's export (`conversations.json` in the archive from Settings, Privacy, Export data).

The file is a JSON array of conversations: `uuid`, `name`, `created_at` (ISO 8601) and
`chat_messages`, each with `uuid`, `sender` (`human` or `assistant`), `created_at`, and the
message as `content` blocks (`{"type": "text", "text": ...}`, besides tool use and others) or, in
older exports, as `text` alone. The text blocks are kept, in the order the export lists the
messages, followed by the text Claude extracted from each attached file (`attachments`, each with
`file_name` and `extracted_content`): what was said about a file means little without it.
"""

from pathlib import Path
from typing import Any

from memvm.engine.models.pages import Role
from memvm.engine.operations.importers.conversations import (
    Conversation,
    conversation,
    conversation_format,
    message_date,
    read_export,
    text_or_none,
)
from memvm.engine.operations.importers.sources import epoch_seconds
from memvm.engine.operations.transfer import TransferError
from memvm.engine.paging.history_write import HistoryMessage

SOURCE = "claude"
_ROLES = {"human": Role.USER, "user": Role.USER, "assistant": Role.ASSISTANT}


def read_conversations(path: Path) -> list[Conversation]:
    return read_export(path, "Claude", _conversation)


def _conversation(where: str, item: Any) -> Conversation:
    if not isinstance(item, dict) or not isinstance(item.get("chat_messages"), list):
        raise TransferError(f'{where} has no "chat_messages": not a Claude export')
    started = epoch_seconds(item.get("created_at"), f"{where}, created_at")
    title = text_or_none(item, "name", where)
    entries = (
        (f"{where}, message {index}", entry) for index, entry in enumerate(item["chat_messages"], start=1)
    )
    return conversation(where, SOURCE, text_or_none(item, "uuid", where), title, started, entries, _message)


def _message(entry: Any, before: float | None, where: str) -> HistoryMessage | None:
    if not isinstance(entry, dict):
        raise TransferError(f"{where} is not a JSON object")
    role = _ROLES.get(text_or_none(entry, "sender", where) or "")
    text = "\n\n".join(part for part in (_text(entry, where), *_attachments(entry, where)) if part)
    if role is None or not text:
        return None
    created = message_date(entry.get("created_at"), before, f"{where}, created_at")
    source_id = text_or_none(entry, "uuid", where)
    if source_id is None:
        raise TransferError(f'{where} has no "uuid"')
    return HistoryMessage(role=role, content=text, created_at=created, source_id=source_id)


def _text(entry: dict[str, Any], where: str) -> str:
    blocks = entry.get("content")
    if blocks is not None and not isinstance(blocks, list):
        raise TransferError(f'{where}: "content" is not a list of blocks')
    if blocks:
        texts = []
        for block in blocks:
            if not isinstance(block, dict):
                raise TransferError(f'{where}: a "content" block is not a JSON object')
            if block.get("type") == "text":
                texts.append((text_or_none(block, "text", f"{where}, text block") or "").strip())
        return "\n\n".join(text for text in texts if text)
    return (text_or_none(entry, "text", where) or "").strip()


def _attachments(entry: dict[str, Any], where: str) -> list[str]:
    """Each attached file's extracted text, under its name."""
    attached = entry.get("attachments")
    if attached is None:
        return []
    if not isinstance(attached, list):
        raise TransferError(f'{where}: "attachments" is not a list')
    texts = []
    for n, item in enumerate(attached):
        place = f"{where}, attachment {n + 1}"
        if not isinstance(item, dict):
            raise TransferError(f"{place} is not a JSON object")
        content = (text_or_none(item, "extracted_content", place) or "").strip()
        if content:
            name = text_or_none(item, "file_name", place) or "a file"
            texts.append(f"Attached {name}:\n{content}")
    return texts


# A JSON array of conversations, each with its "chat_messages".
FORMAT = conversation_format(SOURCE, "a Claude export", '"chat_messages":', read_conversations)
