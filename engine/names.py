"""The shapes of names (namespaces, sessions, page ids), and the names that start with what a
client has typed, for completion.

The shapes are the engine's, so that the tools' arguments and the rules every stored row keeps
(import, doctor) hold names to the same pattern. The completions read a key range of a primary
or unique index (`>= prefix` and `< prefix + U+FFFF`), so the cost does not depend on how many
names exist, and no prefix character acts as a pattern.
"""

from memvm.engine.storage.api import Reads

# A namespace or a session.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$"
# A page id, or the key that becomes one.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"

_SESSIONS = """
SELECT session FROM sessions WHERE namespace = ? AND session >= ? AND session < ?
ORDER BY session LIMIT ?
"""

_PAGE_IDS = """
SELECT page_id FROM pages WHERE namespace = ? AND page_id >= ? AND page_id < ?
ORDER BY page_id LIMIT ?
"""


async def session_names(db: Reads, namespace: str, prefix: str, limit: int) -> list[str]:
    rows = await db.all(_SESSIONS, (namespace, prefix, prefix + "\uffff", limit))
    return [row["session"] for row in rows]


async def page_ids(db: Reads, namespace: str, prefix: str, limit: int) -> list[str]:
    rows = await db.all(_PAGE_IDS, (namespace, prefix, prefix + "\uffff", limit))
    return [row["page_id"] for row in rows]
