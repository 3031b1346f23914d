"""ChatGPT's export (`conversations.json` in the archive from Settings, Data controls, Export).

The file is a JSON array of conversations: `id`, `title`, `create_time` (seconds since the
epoch), `current_node`, and `mapping`, a tree of nodes (`parent`, `children`, `message`) whose
messages hold `author.role`, `create_time` and `content` (`content_type`, `parts`). Edited
prompts and regenerated answers are branches of that tree; the conversation as its user last saw
it is the branch that ends at `current_node`, walked up to the root. Only what was said in words
is kept: text parts of user and assistant messages, not system prompts, tool calls, hidden
messages or images.
"""

from pathlib import Path
from typing import Any

from memvm.engine.models import Role
from memvm.engine.operations.importers.conversations import (
    Conversation,
    conversation,
    message_date,
    read_export,
)
from memvm.engine.operations.importers.sources import epoch_seconds
from memvm.engine.operations.transfer import TransferError
from memvm.engine.paging.history_write import HistoryMessage

SOURCE = "chatgpt"
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}
_TEXT_CONTENT = {"text", "multimodal_text"}


def read_conversations(path: Path) -> list[Conversation]:
    return read_export(path, "ChatGPT", _conversation)


def _conversation(where: str, item: Any) -> Conversation:
    if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
        raise TransferError(f'{where} has no "mapping" of messages: not a ChatGPT export')
    started = epoch_seconds(item.get("create_time"), f"{where}, create_time")
    title = item.get("title") if isinstance(item.get("title"), str) else None
    thread = _thread(item["mapping"], item.get("current_node"))
    entries = ((f"{where}, message {node_id}", (node_id, node)) for node_id, node in thread)
    ident = item.get("id") or item.get("conversation_id")
    return conversation(SOURCE, ident, title, started, entries, _message)


def _thread(mapping: dict[str, Any], current: Any) -> list[tuple[str, dict[str, Any]]]:
    """The nodes from the root down to `current` (else down the last child at each step)."""
    if not isinstance(current, str) or current not in mapping:
        current = _last_leaf(mapping)
    path: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)  # a damaged file's cycle ends the walk instead of looping
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        path.append((node_id, node))
        node_id = node.get("parent")
    return path[::-1]


def _last_leaf(mapping: dict[str, Any]) -> str | None:
    roots = [key for key, node in mapping.items() if isinstance(node, dict) and not node.get("parent")]
    node_id = roots[0] if roots else None
    seen: set[str] = set()
    while node_id is not None and node_id not in seen:
        seen.add(node_id)
        children = [c for c in (mapping.get(node_id) or {}).get("children") or [] if c in mapping]
        if not children:
            return node_id
        node_id = children[-1]
    return node_id


def _message(entry: tuple[str, dict[str, Any]], before: float | None, where: str) -> HistoryMessage | None:
    node_id, node = entry
    message = node.get("message")
    if not isinstance(message, dict):
        return None
    role = _ROLES.get(str((message.get("author") or {}).get("role")))
    metadata = message.get("metadata") or {}
    if role is None or (isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")):
        return None
    content = message.get("content") or {}
    if not isinstance(content, dict) or content.get("content_type", "text") not in _TEXT_CONTENT:
        return None
    parts = [part.strip() for part in content.get("parts") or [] if isinstance(part, str)]
    text = "\n\n".join(part for part in parts if part)
    if not text:
        return None
    created = message_date(message.get("create_time"), before, f"{where}, create_time")
    return HistoryMessage(
        role=role, content=text, created_at=created, source_id=str(message.get("id") or node_id)
    )
