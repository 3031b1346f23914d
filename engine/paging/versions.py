"""Superseded versions of keyed pages: what a page said before `remember` rewrote it.

A rewrite keeps the earlier content, with when it was written and when it was replaced, in
page_versions. Versions are never searched, mapped or listed in a manifest: a stale fact must not
come back as if it were current. They are read only where a person or a model asks for one page
(its resource, the browser view), newest last, and they go with the page when it is forgotten.
"""

from memvm.engine.models.pages import Page, PageVersion
from memvm.engine.storage.api import Reads, Writes

_LATEST = "SELECT max(version) AS version, max(superseded_at) AS at FROM page_versions WHERE page_rowid = ?"

_INSERT = """
INSERT INTO page_versions (
    page_rowid, version, namespace, type, content, tokens_full, written_at, superseded_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""

# The oldest beyond the `keep` newest.
_TRIM = "DELETE FROM page_versions WHERE page_rowid = ? AND version <= ?"

_ALL = """
SELECT version, type, content, tokens_full, written_at, superseded_at FROM page_versions
WHERE page_rowid = ? ORDER BY version
"""


async def supersede(conn: Writes, namespace: str, page: Page, now: float, keep: int) -> None:
    """Keep `page`'s current content as its newest superseded version, and at most `keep` of them
    (none when `keep` is 0).

    The current content was written when the previous version was superseded, or, for the first,
    when the page was created."""
    latest = await conn.one(_LATEST, (page.rowid,))
    number = int(latest["version"] or 0) + 1 if latest else 1
    written_at = latest["at"] if latest and latest["at"] is not None else page.created_at
    if keep > 0:
        row = (namespace, page.type.value, page.levels[0], page.tokens.full, written_at, now)
        await conn.execute(_INSERT, (page.rowid, number, *row))
    await conn.execute(_TRIM, (page.rowid, number - keep))


async def versions_of(conn: Reads, rowid: int) -> list[PageVersion]:
    """A page's superseded versions, oldest first."""
    return [PageVersion(**dict(row)) for row in await conn.all(_ALL, (rowid,))]


async def current_version(conn: Reads, rowid: int) -> int:
    """The number of a page's current content: one more than its newest superseded version."""
    latest = await conn.one(_LATEST, (rowid,))
    return int(latest["version"] or 0) + 1 if latest else 1
