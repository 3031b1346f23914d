"""Superseded versions of keyed pages: what a page said before `remember` rewrote it.

A rewrite keeps the earlier content, with when it was written and when it was replaced, in
page_versions. Versions are never searched, mapped or listed in a manifest: a stale fact must not
come back as if it were current. They are read only where a person or a model asks for one page
(its resource, the browser view), newest last, and they go with the page when it is forgotten.
"""

from memvm.engine.models.pages import Page, PageVersion
from memvm.engine.storage.api import Reads, Writes
from memvm.engine.storage.statements import statement

_LATEST = statement(
    "versions.latest",
    "SELECT max(version) AS version, max(superseded_at) AS at FROM page_versions WHERE page_rowid = :page_rowid",
)

_INSERT = statement(
    "versions.insert",
    """
INSERT INTO page_versions (
    page_rowid, version, namespace, type, content, tokens_full, written_at, superseded_at
) VALUES (:page_rowid, :version, :namespace, :type, :content, :tokens_full, :written_at, :superseded_at)
""",
)

# The oldest beyond the `keep` newest: those up to `:through`.
_TRIM = statement(
    "versions.trim", "DELETE FROM page_versions WHERE page_rowid = :page_rowid AND version <= :through"
)

_ALL = statement(
    "versions.all",
    """
SELECT version, type, content, tokens_full, written_at, superseded_at FROM page_versions
WHERE page_rowid = :page_rowid ORDER BY version
""",
)


async def supersede(conn: Writes, namespace: str, page: Page, now: float, keep: int) -> None:
    """Keep `page`'s current content as its newest superseded version, and at most `keep` of them
    (none when `keep` is 0).

    The current content was written when the previous version was superseded, or, for the first,
    when the page was created."""
    latest = await conn.one(_LATEST, page_rowid=page.rowid)
    number = int(latest["version"] or 0) + 1 if latest else 1
    written_at = latest["at"] if latest and latest["at"] is not None else page.created_at
    if keep > 0:
        await conn.execute(
            _INSERT,
            page_rowid=page.rowid,
            version=number,
            namespace=namespace,
            type=page.type.value,
            content=page.levels[0],
            tokens_full=page.tokens.full,
            written_at=written_at,
            superseded_at=now,
        )
    await conn.execute(_TRIM, page_rowid=page.rowid, through=number - keep)


async def versions_of(conn: Reads, rowid: int) -> list[PageVersion]:
    """A page's superseded versions, oldest first."""
    return [PageVersion(**dict(row)) for row in await conn.all(_ALL, page_rowid=rowid)]


async def current_version(conn: Reads, rowid: int) -> int:
    """The number of a page's current content: one more than its newest superseded version."""
    latest = await conn.one(_LATEST, page_rowid=rowid)
    return int(latest["version"] or 0) + 1 if latest else 1
