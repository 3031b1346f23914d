"""What memory already holds, read for hosts that start a session or catch up on one.

A new session wants the pinned pages and the remembered notes most recently used; catching up on a
host's transcript needs the session's own transcript and tools, to add only what is missing. Each
read is bounded: by an index and a limit, never a scan that grows with the namespace.
"""

from memvm.engine.models.pages import REMEMBERED_TYPES, PageType, Role
from memvm.engine.models.recall import StandingNote, TranscriptText
from memvm.engine.paging.projects import named_elsewhere, visible_sql
from memvm.engine.storage.api import Reads
from memvm.engine.storage.statements import in_list, statement, template

# How many recently used pages are looked through for remembered notes: bounds the query at any
# database size (a note unused for longer than that is found by search, not at the start).
_RECENT_WINDOW = 500
# A session's recent calls looked through for the tools it uses.
_CALL_WINDOW = 200

_COLUMNS = "rowid, page_id, type, role, session, created_at, pinned, abstract, last_access, project"

# The remembered types, as the IN list of `_STANDING` names them: the same few always.
_REMEMBERED_MARKS, _REMEMBERED_PARAMS = in_list(sorted(kind.value for kind in REMEMBERED_TYPES), "type")

_STANDING = template(
    "history.standing",
    f"""
SELECT page_id, type, role, session, created_at, pinned, abstract, project FROM (
    SELECT * FROM (
        SELECT {_COLUMNS} FROM live_pages p WHERE namespace = :namespace AND pinned = 1 {{visible}}
        ORDER BY last_access DESC LIMIT :limit
    ) AS pinned_pages
    UNION
    SELECT * FROM (
        SELECT {_COLUMNS} FROM (
            SELECT {_COLUMNS} FROM live_pages p WHERE namespace = :namespace {{visible}}
            ORDER BY last_access DESC LIMIT :recent_window
        ) AS recent WHERE type IN ({_REMEMBERED_MARKS})
    ) AS remembered
) AS standing
ORDER BY pinned DESC, last_access DESC, rowid DESC
LIMIT :limit
""",
    visible=visible_sql("a project")[0],
)

_SESSION_TRANSCRIPT = statement(
    "history.session transcript",
    """
SELECT role, content FROM (
    SELECT p.rowid, p.role, t.content FROM pages p JOIN page_texts t ON t.rowid = p.rowid
    WHERE p.namespace = :namespace AND p.session = :session AND p.type = :type
    ORDER BY p.rowid DESC LIMIT :limit
) AS latest ORDER BY rowid
""",
)

_SESSION_TOOLS = statement(
    "history.session tools",
    """
SELECT tool, max(call_id) AS last FROM (
    SELECT tool, call_id FROM tool_calls WHERE namespace = :namespace AND session = :session
    ORDER BY call_id DESC LIMIT :call_window
) AS latest GROUP BY tool ORDER BY last DESC LIMIT :limit
""",
)

_KNOWN_TOOLS = statement(
    "history.known tools",
    "SELECT tool FROM tool_stats WHERE namespace = :namespace "
    "ORDER BY last_at DESC, last_call_id DESC LIMIT :limit",
)


async def standing_notes(
    conn: Reads, namespace: str, limit: int, project: str | None = None
) -> list[StandingNote]:
    """Pinned pages, then remembered notes, each most recently used first; none expired, none of a
    project other than `project`."""
    visible, params = visible_sql(project)
    rows = await conn.all(
        _STANDING.fill(visible=visible),
        namespace=namespace,
        limit=limit,
        recent_window=_RECENT_WINDOW,
        **_REMEMBERED_PARAMS,
        **params,
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
    rows = await conn.all(
        _SESSION_TRANSCRIPT, namespace=namespace, session=session, type=PageType.TRANSCRIPT.value, limit=limit
    )
    return [TranscriptText(role=Role(row["role"]), content=row["content"]) for row in rows]


_TRANSCRIPT_PAGES = statement(
    "history.transcript pages",
    "SELECT count(*) FROM pages WHERE namespace = :namespace AND session = :session AND type = :type",
)


async def transcript_pages(conn: Reads, namespace: str, session: str) -> int:
    """How many transcript pages the session holds (on the session's index)."""
    row = await conn.one(
        _TRANSCRIPT_PAGES, namespace=namespace, session=session, type=PageType.TRANSCRIPT.value
    )
    return int(row[0]) if row else 0


async def session_tools(conn: Reads, namespace: str, session: str, limit: int) -> list[str]:
    """The tools the session called lately, most recent first."""
    rows = await conn.all(
        _SESSION_TOOLS, namespace=namespace, session=session, call_window=_CALL_WINDOW, limit=limit
    )
    return [row["tool"] for row in rows]


async def known_tools(conn: Reads, namespace: str, limit: int) -> list[str]:
    """The tools the namespace has recorded calls of, most recently used first."""
    rows = await conn.all(_KNOWN_TOOLS, namespace=namespace, limit=limit)
    return [row["tool"] for row in rows]
