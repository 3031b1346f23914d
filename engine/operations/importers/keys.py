"""Keys and session names made from the names other tools use (an entity's name, a note's path,
a conversation's id), as a pure function of the name alone, so that the next import of the same
thing finds it whatever else the file holds and in whatever order.

A key keeps to names.ID_PATTERN and a session name to names.NAME_PATTERN: letters, digits and
`_ . : -`, starting with a letter or digit. A name that already is one is used as it is. A name
that had to change (other characters become `_`, a leading `_ . : -` is dropped, a name too long
is cut) gains `-` and a digest of the name as given, so that two names that change into the same
text (`New York`, `New_York`) never share a key. A name holding a secret-shaped string (an API key
used as a conversation id or an entity's name) becomes the digest alone: a key is never redacted,
so none may carry a secret.
"""

import hashlib
import re

from memvm.engine.redaction import redact

KEY_CHARS = 128  # names.ID_PATTERN
SESSION_CHARS = 64  # names.NAME_PATTERN

_OUTSIDE = re.compile(r"[^A-Za-z0-9_.:\-]+")
_DIGEST_CHARS = 8


def digest(text: str) -> str:
    # surrogatepass: a name is hashed whatever it holds; readers refuse lone surrogates earlier.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]


def name_for(prefix: str, text: str, limit: int) -> str:
    """`prefix` (letters first, e.g. "entity:") and `text` as one name of at most `limit` characters."""
    if redact(text) != text:
        return f"{prefix}secret-{digest(text)}"
    name = prefix + text
    if len(name) <= limit and _OUTSIDE.search(text) is None and name[:1].isalnum() and name.isascii():
        return name
    # A name starts with a letter or digit: what else leads (`_draft.md`, `-x`) is dropped.
    kept = (prefix + _OUTSIDE.sub("_", text)).lstrip("_.:-").rstrip("_")
    return f"{kept[: limit - _DIGEST_CHARS - 1]}-{digest(text)}".lstrip("-")
