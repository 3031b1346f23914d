"""Claude's export (`conversations.json` in the archive from Settings, Privacy, Export data).

The file is a JSON array of conversations: `uuid`, `name`, `created_at` (ISO 8601) and
`chat_messages`, each with `uuid`, `sender` (`human` or `assistant`), `created_at`, and the
message as `content` blocks (`{"type": "text", "text": ...}`, besides tool use and others) or, in
older exports, as `text` alone. The text blocks are kept, in the order the export lists the
messages.
"""

from pathlib import Path
from typing import Any

from memvm.engine.models import Role
from memvm.engine.operations.importers.conversations import Conversation, exported_conversations, message_date
from memvm.engine.operations.importers.keys import SESSION_CHARS, digest, name_for
from memvm.engine.operations.importers.sources import epoch_seconds
from memvm.engine.operations.transfer import TransferError
from memvm.engine.paging.history_write import HistoryMessage

SOURCE = "claude"
_ROLES = {"human": Role.USER, "user": Role.USER, "assistant": Role.ASSISTANT}


def read_conversations(path: Path) -> list[Conversation]:
    export = exported_conversations(path, "Claude")
    return [_conversation(path, number, item) for number, item in enumerate(export, start=1)]


def _conversation(path: Path, number: int, item: Any) -> Conversation:
    where = f"{path}: conversation {number}"
    if not isinstance(item, dict) or not isinstance(item.get("chat_messages"), list):
        raise TransferError(f'{where} has no "chat_messages": not a Claude export')
    started = epoch_seconds(item.get("created_at"), f"{where}, created_at")
    title = item.get("name") if isinstance(item.get("name"), str) and item.get("name") else None
    ident = str(item["uuid"]) if item.get("uuid") else digest(f"{title}\n{started}")
    messages = []
    before = started
    for index, entry in enumerate(item["chat_messages"], start=1):
        message = _message(entry, before, f"{where}, message {index}")
        if message is not None:
            messages.append(message)
            before = message.created_at
    return Conversation(session=name_for(f"{SOURCE}-", ident, SESSION_CHARS), title=title, messages=messages)


def _message(entry: Any, before: float | None, where: str) -> HistoryMessage | None:
    if not isinstance(entry, dict):
        raise TransferError(f"{where} is not a JSON object")
    role = _ROLES.get(str(entry.get("sender")))
    text = _text(entry)
    if role is None or not text:
        return None
    created = message_date(entry.get("created_at"), before, f"{where}, created_at")
    if not entry.get("uuid"):
        raise TransferError(f'{where} has no "uuid"')
    return HistoryMessage(role=role, content=text, created_at=created, source_id=str(entry["uuid"]))


def _text(entry: dict[str, Any]) -> str:
    blocks = entry.get("content")
    if isinstance(blocks, list) and blocks:
        texts = [
            block["text"].strip()
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        return "\n\n".join(text for text in texts if text)
    text = entry.get("text")
    return text.strip() if isinstance(text, str) else ""
