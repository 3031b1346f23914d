"""Keys and session names made from the names other tools use (an entity's name, a note's path,
a conversation's id), deterministically, so that the next import of the same thing finds it.

A key keeps to names.ID_PATTERN and a session name to names.NAME_PATTERN: letters, digits and
`_ . : -`, starting with a letter or digit. Other characters become `_`; a name too long keeps
its start and gains a digest of the whole, so that two long names stay apart.
"""

import hashlib
import re

KEY_CHARS = 128  # names.ID_PATTERN
SESSION_CHARS = 64  # names.NAME_PATTERN

_OUTSIDE = re.compile(r"[^A-Za-z0-9_.:\-]+")
_DIGEST_CHARS = 8


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]


def name_for(prefix: str, text: str, limit: int) -> str:
    """`prefix` (letters first, e.g. "entity:") and `text` as one name of at most `limit` characters."""
    # A name starts with a letter or digit: what else leads (`_draft.md`, `-x`) is dropped.
    name = (prefix + _OUTSIDE.sub("_", text)).lstrip("_.:-").rstrip("_") or digest(text)
    if len(name) > limit:
        name = f"{name[: limit - _DIGEST_CHARS - 1]}-{digest(text)}"
    return name


class Keys:
    """Hands out keys for one import: two different names that map to the same key (`a b` and
    `a_b`) get different keys, the later one with a digest of its name."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}

    def key(self, prefix: str, name: str) -> str:
        key = name_for(prefix, name, KEY_CHARS)
        if self._owner.setdefault(key, name) != name:
            key = f"{name_for(prefix, name, KEY_CHARS - _DIGEST_CHARS - 1)}-{digest(name)}"
            self._owner[key] = name
        return key
