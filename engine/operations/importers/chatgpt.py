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

SOURCE = "chatgpt"
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}
_TEXT_CONTENT = {"text", "multimodal_text"}


def read_conversations(path: Path) -> list[Conversation]:
    return read_export(path, "ChatGPT", _conversation)


def _conversation(where: str, item: Any) -> Conversation:
    if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
        raise TransferError(f'{where} has no "mapping" of messages: not a ChatGPT export')
    started = epoch_seconds(item.get("create_time"), f"{where}, create_time")
    title = text_or_none(item, "title", where)
    mapping = _checked_mapping(item["mapping"], where)
    thread = _thread(mapping, item.get("current_node"))
    entries = ((f"{where}, message {node_id}", (node_id, node)) for node_id, node in thread)
    ident = text_or_none(item, "id", where) or text_or_none(item, "conversation_id", where)
    return conversation(where, SOURCE, ident, title, started, entries, _message)


def _checked_mapping(mapping: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """The tree's nodes, each checked for the shape the walk relies on."""
    for node_id, node in mapping.items():
        at = f"{where}, node {node_id}"
        if not isinstance(node, dict):
            raise TransferError(f"{at} is not a JSON object")
        if node.get("parent") is not None and not isinstance(node["parent"], str):
            raise TransferError(f'{at}: "parent" is not a node id')
        children = node.get("children")
        if children is not None and (
            not isinstance(children, list) or not all(isinstance(child, str) for child in children)
        ):
            raise TransferError(f'{at}: "children" is not a list of node ids')
        if node.get("message") is not None and not isinstance(node["message"], dict):
            raise TransferError(f'{at}: "message" is not a JSON object')
    return mapping


def _thread(mapping: dict[str, dict[str, Any]], current: Any) -> list[tuple[str, dict[str, Any]]]:
    """The nodes from the root down to `current` (else down the last child at each step)."""
    if not isinstance(current, str) or current not in mapping:
        current = _last_leaf(mapping)
    path: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    node_id: str | None = current
    while node_id is not None and node_id in mapping and node_id not in seen:
        seen.add(node_id)  # a damaged file's cycle ends the walk instead of looping
        node = mapping[node_id]
        path.append((node_id, node))
        node_id = node.get("parent")
    return path[::-1]


def _last_leaf(mapping: dict[str, dict[str, Any]]) -> str | None:
    roots = [key for key, node in mapping.items() if not node.get("parent")]
    node_id = roots[0] if roots else None
    seen: set[str] = set()
    while node_id is not None and node_id not in seen:
        seen.add(node_id)
        children = [c for c in mapping[node_id].get("children") or [] if c in mapping]
        if not children:
            return node_id
        node_id = children[-1]
    return node_id


def _message(entry: tuple[str, dict[str, Any]], before: float | None, where: str) -> HistoryMessage | None:
    node_id, node = entry
    message = node.get("message")
    if message is None:
        return None
    author = _object(message, "author", where)
    metadata = _object(message, "metadata", where)
    content = _object(message, "content", where)
    role = _ROLES.get(text_or_none(author, "role", f"{where}, author") or "")
    if role is None or metadata.get("is_visually_hidden_from_conversation"):
        return None
    kind = text_or_none(content, "content_type", f"{where}, content") or "text"
    if kind not in _TEXT_CONTENT:
        return None
    parts = content.get("parts")
    if parts is None:
        parts = []
    if not isinstance(parts, list) or not all(part is None or isinstance(part, str | dict) for part in parts):
        raise TransferError(f'{where}: "parts" is not a list of texts and attachments')
    texts = [part.strip() for part in parts if isinstance(part, str)]
    text = "\n\n".join(part for part in texts if part)
    if not text:
        return None
    created = message_date(message.get("create_time"), before, f"{where}, create_time")
    source_id = text_or_none(message, "id", where) or node_id
    return HistoryMessage(role=role, content=text, created_at=created, source_id=source_id)


def _object(item: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    """The field `name` of `item` when it is an object; empty when absent; refused otherwise."""
    value = item.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TransferError(f'{where}: "{name}" is not a JSON object')
    return value


# A JSON array of conversations, each with its "mapping".
FORMAT = conversation_format(SOURCE, "a ChatGPT export", '"mapping":', read_conversations)
