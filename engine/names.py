"""The shapes of names (namespaces, sessions, page ids), and the names that start with what a
client has typed, for completion.

The shapes are the engine's, so that the tools' arguments and the rules every stored row keeps
(import, doctor) hold names to the same pattern. The completions read a key range of a primary
or unique index (`>= prefix` and `< prefix + U+FFFF`), so the cost does not depend on how many
names exist, and no prefix character acts as a pattern.

A name is checked whole: the patterns keep `^...$` for pydantic's schemas (whose regex engine ends
`$` at the end of the text), while Python's `re.match` lets `$` pass before a final newline, so a
name such as "trail\\n" would slip through and break every restore of the file. Python code asks
`is_name` and `is_page_id`, never `re.match`.
"""

import re

from memvm.engine.storage.api import Reads
from memvm.engine.storage.statements import statement

# A namespace or a session.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$"
# A page id, or the key that becomes one.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"
# A tool's name: MCP tool names, plus the separators hosts use to prefix a server's name
# ("github/create_issue").
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:/\-]{0,127}$"
# What a refusal of a bad name says it takes.
NAME_RULE = "up to 64 letters, digits and _ . : -, starting with a letter or digit"

_NAME = re.compile(NAME_PATTERN)
_PAGE_ID = re.compile(ID_PATTERN)
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


def is_name(text: object) -> bool:
    """Whether `text` is, whole, a namespace or session name."""
    return isinstance(text, str) and _NAME.fullmatch(text) is not None


def is_page_id(text: object) -> bool:
    """Whether `text` is, whole, a page id (or a key)."""
    return isinstance(text, str) and _PAGE_ID.fullmatch(text) is not None


def is_tool_name(text: object) -> bool:
    """Whether `text` is, whole, a tool's name."""
    return isinstance(text, str) and _TOOL_NAME.fullmatch(text) is not None


_SESSIONS = statement(
    "names.sessions",
    """
SELECT session FROM sessions WHERE namespace = :namespace AND session >= :prefix AND session < :past
ORDER BY session LIMIT :limit
""",
)

_PAGE_IDS = statement(
    "names.page ids",
    """
SELECT page_id FROM pages WHERE namespace = :namespace AND page_id >= :prefix AND page_id < :past
ORDER BY page_id LIMIT :limit
""",
)


async def session_names(db: Reads, namespace: str, prefix: str, limit: int) -> list[str]:
    rows = await db.all(_SESSIONS, **_range(namespace, prefix, limit))
    return [row["session"] for row in rows]


async def page_ids(db: Reads, namespace: str, prefix: str, limit: int) -> list[str]:
    rows = await db.all(_PAGE_IDS, **_range(namespace, prefix, limit))
    return [row["page_id"] for row in rows]


def _range(namespace: str, prefix: str, limit: int) -> dict[str, object]:
    """The names from `prefix` up to the last that starts with it."""
    return {"namespace": namespace, "prefix": prefix, "past": prefix + "\uffff", "limit": limit}
