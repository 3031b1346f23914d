"""What memory already holds, read for hosts that start a session or catch up on one.

A new session wants the pinned pages and the remembered notes most recently used; catching up on a
host's transcript needs the session's own transcript and tools, to add only what is missing. Each
read is bounded: by an index and a limit, never a scan that grows with the namespace.
"""

from memvm.engine.models.pages import REMEMBERED_TYPES, PageType, Role
from memvm.engine.models.recall import StandingNote, TranscriptText
from memvm.engine.paging.projects import named_elsewhere, visible_sql
from memvm.engine.storage.api import Reads

# How many recently used pages are looked through for remembered notes: bounds the query at any
# database size (a note unused for longer than that is found by search, not at the start).
_RECENT_WINDOW = 500
# A session's recent calls looked through for the tools it uses.
_CALL_WINDOW = 200

_COLUMNS = "rowid, page_id, type, role, session, created_at, pinned, abstract, last_access, project"

_STANDING = f"""
SELECT page_id, type, role, session, created_at, pinned, abstract, project FROM (
    SELECT * FROM (
        SELECT {_COLUMNS} FROM live_pages p WHERE namespace = ? AND pinned = 1 {{visible}}
        ORDER BY last_access DESC LIMIT ?
    ) AS pinned_pages
    UNION
    SELECT * FROM (
        SELECT {_COLUMNS} FROM (
            SELECT {_COLUMNS} FROM live_pages p WHERE namespace = ? {{visible}}
            ORDER BY last_access DESC LIMIT ?
        ) AS recent WHERE type IN ({{marks}})
    ) AS remembered
) AS standing
ORDER BY pinned DESC, last_access DESC, rowid DESC
LIMIT ?
"""

_SESSION_TRANSCRIPT = """
SELECT role, content FROM (
    SELECT p.rowid, p.role, t.content FROM pages p JOIN page_texts t ON t.rowid = p.rowid
    WHERE p.namespace = ? AND p.session = ? AND p.type = ?
    ORDER BY p.rowid DESC LIMIT ?
) AS latest ORDER BY rowid
"""

_SESSION_TOOLS = """
SELECT tool, max(call_id) AS last FROM (
    SELECT tool, call_id FROM tool_calls WHERE namespace = ? AND session = ? ORDER BY call_id DESC LIMIT ?
) AS latest GROUP BY tool ORDER BY last DESC LIMIT ?
"""

_KNOWN_TOOLS = (
    "SELECT tool FROM tool_stats WHERE namespace = ? ORDER BY last_at DESC, last_call_id DESC LIMIT ?"
)


async def standing_notes(
    conn: Reads, namespace: str, limit: int, project: str | None = None
) -> list[StandingNote]:
    """Pinned pages, then remembered notes, each most recently used first; none expired, none of a
    project other than `project`."""
    remembered = sorted(kind.value for kind in REMEMBERED_TYPES)
    visible, params = visible_sql(project)
    sql = _STANDING.format(marks=", ".join("?" * len(remembered)), visible=visible)
    rows = await conn.all(
        sql, (namespace, *params, limit, namespace, *params, _RECENT_WINDOW, *remembered, limit)
    )
    return [
        StandingNote(
            page_id=row["page_id"],
            type=PageType(row["type"]),
            role=Role(row["role"]) if row["role"] else None,
            session=row["session"],
            created_at=row["created_at"],
            pinned=bool(row["pinned"]),
            abstract=row["abstract"],
            project=named_elsewhere(project, row["project"]),
        )
        for row in rows
    ]


async def session_transcript(conn: Reads, namespace: str, session: str, limit: int) -> list[TranscriptText]:
    """The session's last `limit` transcript pages, oldest first."""
    rows = await conn.all(_SESSION_TRANSCRIPT, (namespace, session, PageType.TRANSCRIPT.value, limit))
    return [TranscriptText(role=Role(row["role"]), content=row["content"]) for row in rows]


_TRANSCRIPT_PAGES = "SELECT count(*) FROM pages WHERE namespace = ? AND session = ? AND type = ?"


async def transcript_pages(conn: Reads, namespace: str, session: str) -> int:
    """How many transcript pages the session holds (on the session's index)."""
    row = await conn.one(_TRANSCRIPT_PAGES, (namespace, session, PageType.TRANSCRIPT.value))
    return int(row[0]) if row else 0


async def session_tools(conn: Reads, namespace: str, session: str, limit: int) -> list[str]:
    """The tools the session called lately, most recent first."""
    rows = await conn.all(_SESSION_TOOLS, (namespace, session, _CALL_WINDOW, limit))
    return [row["tool"] for row in rows]


async def known_tools(conn: Reads, namespace: str, limit: int) -> list[str]:
    """The tools the namespace has recorded calls of, most recently used first."""
    rows = await conn.all(_KNOWN_TOOLS, (namespace, limit))
    return [row["tool"] for row in rows]
