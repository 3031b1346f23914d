"""Names that start with what a client has typed: sessions and page ids, for completion.

Both read a key range of a primary or unique index (`>= prefix` and `< prefix + U+FFFF`), so the
cost does not depend on how many names exist, and no prefix character acts as a pattern.
"""

from memvm.engine.db import Reads

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
