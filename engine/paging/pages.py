"""Page rows: ids, insert, lookup, the `remember` upsert and deletion."""

import json

from memvm.engine.errors import PageNotFound
from memvm.engine.models.pages import LevelTokens, Modality, NewPage, Page, PageType, Role
from memvm.engine.paging.levels import Levels
from memvm.engine.paging.projects import EVERYWHERE, sees, visible_sql
from memvm.engine.storage.api import Reads, Row, Writes
from memvm.engine.storage.statements import statement, template

# Readable ids per page type: msg_000123, tool_000045, note_000007, ...
ID_PREFIX = {
    PageType.TRANSCRIPT: "msg",
    PageType.TOOL_RESULT: "tool",
    PageType.CLAIM: "claim",
    PageType.NOTE: "note",
    PageType.PREFERENCE: "pref",
    PageType.SUMMARY: "sum",
    PageType.PROCEDURE: "proc",
}

PAGE_COLUMNS = """
    p.rowid, p.page_id, p.session, p.type, p.role, p.modality, p.importance, p.pinned, p.provenance,
    p.created_at, p.last_access, p.access_count, p.turn, p.metadata,
    t.content, t.reduced, p.abstract, p.reference,
    p.tokens_full, p.tokens_reduced, p.tokens_abstract, p.tokens_reference, p.expires_at, p.project
"""

# The long levels (full and reduced) live apart from the page row, in page_texts: what reads only
# the small columns (the manifest, ranking, the working set's bookkeeping) never reads through them.
WITH_TEXTS = "pages p JOIN page_texts t ON t.rowid = p.rowid"
# The same, of the pages not expired as of the transaction's moment: what every read but a write's
# own look at a page it replaces or deletes uses (the live_pages view, schema_changes.py).
LIVE_WITH_TEXTS = "live_pages p JOIN page_texts t ON t.rowid = p.rowid"

_NEXT_ID = statement(
    "pages.next id",
    """
INSERT INTO id_counters (namespace, prefix, last) VALUES (:namespace, :prefix, 1)
ON CONFLICT (namespace, prefix) DO UPDATE SET last = id_counters.last + 1
RETURNING last
""",
)

# The row first, then its texts: the second insert is what indexes the page for search.
_INSERT = statement(
    "pages.insert",
    """
INSERT INTO pages (
    namespace, page_id, session, type, role, modality, importance, pinned, provenance,
    created_at, last_access, access_count, turn, metadata, abstract, reference,
    tokens_full, tokens_reduced, tokens_abstract, tokens_reference, expires_at, project
) VALUES (
    :namespace, :page_id, :session, :type, :role, :modality, :importance, :pinned, :provenance,
    :now, :now, 0, :turn, :metadata, :abstract, :reference,
    :tokens_full, :tokens_reduced, :tokens_abstract, :tokens_reference, :expires_at, :project
)
RETURNING rowid
""",
)

_INSERT_TEXTS = statement(
    "pages.insert texts",
    "INSERT INTO page_texts (rowid, namespace, content, reduced) VALUES (:rowid, :namespace, :content, :reduced)",
)

_UPDATE_REMEMBERED = statement(
    "pages.update remembered",
    """
UPDATE pages SET
    type = :type, importance = :importance, pinned = :pinned, provenance = :provenance,
    last_access = :now, turn = :turn, metadata = :metadata, abstract = :abstract, reference = :reference,
    tokens_full = :tokens_full, tokens_reduced = :tokens_reduced, tokens_abstract = :tokens_abstract,
    tokens_reference = :tokens_reference, expires_at = :expires_at, project = :project
WHERE namespace = :namespace AND rowid = :rowid
""",
)

_UPDATE_TEXTS = statement(
    "pages.update texts",
    "UPDATE page_texts SET content = :content, reduced = :reduced WHERE namespace = :namespace AND rowid = :rowid",
)


def expired_count_sql(namespace: str) -> str:
    """A subquery counting a namespace's pages expired and not yet deleted (few, on their partial
    index), given the namespace's parameter (`:namespace`): what a page count from page_counts
    leaves out."""
    return f"(SELECT count(*) FROM expired_pages WHERE namespace = {namespace})"


_GET = statement(
    "pages.get",
    f"SELECT {PAGE_COLUMNS} FROM {WITH_TEXTS} WHERE p.namespace = :namespace AND p.page_id = :page_id",
)
_GET_LIVE = statement(
    "pages.get live",
    f"SELECT {PAGE_COLUMNS} FROM {LIVE_WITH_TEXTS} WHERE p.namespace = :namespace AND p.page_id = :page_id",
)

_GET_BY_ROWID = statement(
    "pages.get by rowid",
    f"SELECT {PAGE_COLUMNS} FROM {WITH_TEXTS} WHERE p.namespace = :namespace AND p.rowid = :rowid",
)

_TOUCH = statement(
    "pages.touch",
    """
UPDATE pages SET last_access = :now, access_count = access_count + 1 WHERE namespace = :namespace AND rowid = :rowid
""",
)

_SET_PINNED = statement(
    "pages.set pinned", "UPDATE pages SET pinned = :pinned WHERE namespace = :namespace AND rowid = :rowid"
)

# The texts go with the row (ON DELETE CASCADE).
_DELETE = statement("pages.delete", "DELETE FROM pages WHERE namespace = :namespace AND rowid = :rowid")


def level_texts(row: Row) -> tuple[str, str, str, str]:
    """A row's text at levels 0..3, from the columns of the same names (see PAGE_COLUMNS)."""
    return (row["content"], row["reduced"], row["abstract"], row["reference"])


def level_tokens(row: Row) -> LevelTokens:
    """A row's exact token counts at levels 0..3, from the pages `tokens_*` columns."""
    return LevelTokens(
        full=row["tokens_full"],
        reduced=row["tokens_reduced"],
        abstract=row["tokens_abstract"],
        reference=row["tokens_reference"],
    )


def page_from_row(row: Row) -> Page:
    return Page(
        rowid=row["rowid"],
        page_id=row["page_id"],
        session=row["session"],
        type=PageType(row["type"]),
        role=Role(row["role"]) if row["role"] else None,
        modality=Modality(row["modality"]),
        importance=row["importance"],
        pinned=bool(row["pinned"]),
        provenance=row["provenance"],
        created_at=row["created_at"],
        last_access=row["last_access"],
        access_count=row["access_count"],
        turn=row["turn"],
        metadata=json.loads(row["metadata"]),
        levels=level_texts(row),
        tokens=level_tokens(row),
        expires_at=row["expires_at"],
        project=row["project"],
    )


async def next_page_id(conn: Writes, namespace: str, page_type: PageType) -> str:
    prefix = ID_PREFIX[page_type]
    row = await conn.one(_NEXT_ID, namespace=namespace, prefix=prefix)
    assert row is not None  # RETURNING always yields the counter
    return f"{prefix}_{row[0]:06d}"


async def insert_page(
    conn: Writes,
    *,
    namespace: str,
    session: str,
    page_id: str,
    page: NewPage,
    levels: Levels,
    turn: int,
    now: float,
    expires_at: float | None = None,
    project: str = EVERYWHERE,
) -> Page:
    """Insert one page of `project` and return it as stored."""
    content, reduced, _, _ = levels.texts
    row = await conn.one(
        _INSERT,
        namespace=namespace,
        page_id=page_id,
        session=session,
        role=page.role.value if page.role else None,
        modality=page.modality.value,
        **_written(page, levels, turn=turn, now=now, expires_at=expires_at, project=project),
    )
    assert row is not None  # RETURNING always yields the inserted row
    await conn.execute(
        _INSERT_TEXTS, rowid=row["rowid"], namespace=namespace, content=content, reduced=reduced
    )
    await conn.index_pages([row["rowid"]])
    stored = await conn.one(_GET_BY_ROWID, namespace=namespace, rowid=row["rowid"])
    assert stored is not None  # inserted just now, in this transaction
    return page_from_row(stored)


async def update_remembered(
    conn: Writes,
    *,
    namespace: str,
    rowid: int,
    page: NewPage,
    levels: Levels,
    turn: int,
    now: float,
    expires_at: float | None,
    project: str,
) -> Page:
    """Rewrite a remembered page in place, as a page of `project`, and return it as now stored."""
    content, reduced, _, _ = levels.texts
    await conn.execute(
        _UPDATE_REMEMBERED,
        namespace=namespace,
        rowid=rowid,
        **_written(page, levels, turn=turn, now=now, expires_at=expires_at, project=project),
    )
    await conn.execute(_UPDATE_TEXTS, content=content, reduced=reduced, namespace=namespace, rowid=rowid)
    await conn.index_pages([rowid])
    row = await conn.one(_GET_BY_ROWID, namespace=namespace, rowid=rowid)
    assert row is not None  # the caller just found it, in this transaction
    return page_from_row(row)


async def get_page(conn: Reads, namespace: str, page_id: str, *, live: bool = False) -> Page | None:
    """The page `page_id`; if `live`, None for a page expired by the transaction's moment (which
    only a write that deletes it, or a key's rewrite, still needs to see)."""
    row = await conn.one(_GET_LIVE if live else _GET, namespace=namespace, page_id=page_id)
    return page_from_row(row) if row else None


async def page_seen_from(
    conn: Reads, namespace: str, page_id: str, project: str | None, *, live: bool = False
) -> Page:
    """The page `page_id` as a reader in `project` may use it (see get_page for `live`):
    PageNotFound when there is none, and when it is another project's, which no id reaches."""
    page = await get_page(conn, namespace, page_id, live=live)
    if page is None or not sees(project, page.project):
        raise PageNotFound(page_id)
    return page


# A remembered page of one type holding exactly this text; the namespace's pages of that type are
# few beside its transcript, and the text is compared only on those.
_SAME_TEXT = template(
    "pages.same text",
    f"""
SELECT {PAGE_COLUMNS} FROM {LIVE_WITH_TEXTS}
WHERE p.namespace = :namespace AND p.type = :type AND t.content = :content {{visible}}
ORDER BY p.rowid LIMIT 1
""",
    visible=visible_sql("a project")[0],
)


async def page_with_text(
    conn: Reads, namespace: str, page_type: PageType, text: str, project: str | None = None
) -> Page | None:
    """The oldest live page of `page_type` whose full text is `text`, among those a reader in
    `project` sees, if any."""
    visible, params = visible_sql(project)
    row = await conn.one(
        _SAME_TEXT.fill(visible=visible), namespace=namespace, type=page_type.value, content=text, **params
    )
    return page_from_row(row) if row else None


async def touch_page(conn: Writes, namespace: str, rowid: int, now: float) -> None:
    await conn.execute(_TOUCH, now=now, namespace=namespace, rowid=rowid)


async def set_pinned(conn: Writes, namespace: str, rowid: int, pinned: bool) -> None:
    await conn.execute(_SET_PINNED, pinned=int(pinned), namespace=namespace, rowid=rowid)


async def delete_page(conn: Writes, namespace: str, rowid: int) -> None:
    await conn.execute(_DELETE, namespace=namespace, rowid=rowid)


def _written(
    page: NewPage, levels: Levels, *, turn: int, now: float, expires_at: float | None, project: str
) -> dict[str, object]:
    """The parameters an insert and a rewrite of a page both set on its row."""
    _, _, abstract, reference = levels.texts
    tokens = levels.tokens
    return {
        "type": page.type.value,
        "importance": page.importance,
        "pinned": int(page.pinned),
        "provenance": page.provenance,
        "now": now,
        "turn": turn,
        "metadata": json.dumps(page.metadata, ensure_ascii=False),
        "abstract": abstract,
        "reference": reference,
        "tokens_full": tokens.full,
        "tokens_reduced": tokens.reduced,
        "tokens_abstract": tokens.abstract,
        "tokens_reference": tokens.reference,
        "expires_at": expires_at,
        "project": project,
    }
