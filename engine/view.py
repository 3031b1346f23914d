"""What the browser view reads: sessions, pages a screen at a time, the mutation log, bindings and
tool statistics, each one bounded query on an index.

Pages are listed newest first and paged by rowid (keyset), so the cost of a screen does not grow
with how far down the list it is, nor with how many pages the file holds.
"""

import json
from typing import Any

from memvm.engine.db import Reads
from memvm.engine.models import PageType
from pydantic import BaseModel

# The most rows one screen asks for.
MAX_ROWS = 200


class SessionRow(BaseModel):
    session: str
    turn: int
    created_at: float
    last_call_at: float
    pages: int


class PageRow(BaseModel):
    page_id: str
    session: str
    type: str
    role: str | None
    pinned: bool
    importance: float
    provenance: str
    created_at: float
    last_access: float
    access_count: int
    abstract: str
    tokens: dict[str, int]
    cursor: int  # pass as `before` for the next screen


class MutationRow(BaseModel):
    seq: int
    session: str
    page_id: str
    turn: int
    kind: str
    level_before: int | None
    level_after: int | None
    actor: str
    cause: str
    at: float


class BindingRow(BaseModel):
    ref: str
    session: str
    tool: str
    args: str
    value: str
    value_type: str
    turn: int
    created_at: float


class ToolRow(BaseModel):
    tool: str
    calls: int
    successes: int
    mean_ms: float | None
    last_at: float


_SESSIONS = """
SELECT s.session, s.turn, s.created_at, s.last_call_at,
       (SELECT count(*) FROM pages p WHERE p.namespace = s.namespace AND p.session = s.session) AS pages
FROM sessions s WHERE s.namespace = ? ORDER BY s.last_call_at DESC LIMIT ?
"""

_PAGE_FIELDS = """
rowid, page_id, session, type, role, pinned, importance, provenance, created_at, last_access,
access_count, abstract, tokens_full, tokens_reduced, tokens_abstract, tokens_reference
"""

_MUTATIONS = """
SELECT seq, session, page_id, turn, kind, level_before, level_after, actor, cause, at
FROM mutation_log WHERE namespace = ? AND session = ? ORDER BY seq DESC LIMIT ?
"""

_BINDINGS = """
SELECT seq, session, tool, args, value, value_type, turn, created_at
FROM bindings WHERE namespace = ? AND session = ? ORDER BY seq DESC LIMIT ?
"""

_TOOLS = """
SELECT tool, calls, successes, duration_total, duration_count, last_at
FROM tool_stats WHERE namespace = ? ORDER BY last_at DESC LIMIT ?
"""


def _limit(limit: int) -> int:
    return max(1, min(limit, MAX_ROWS))


async def sessions(conn: Reads, namespace: str, limit: int = MAX_ROWS) -> list[SessionRow]:
    """The namespace's sessions, the most recently active first."""
    rows = await conn.all(_SESSIONS, (namespace, _limit(limit)))
    return [SessionRow(**dict(row)) for row in rows]


async def pages(
    conn: Reads,
    namespace: str,
    *,
    session: str | None = None,
    page_type: PageType | None = None,
    pinned_only: bool = False,
    before: int | None = None,
    limit: int = 50,
) -> list[PageRow]:
    """One screen of pages, newest first, after the one whose cursor is `before`."""
    where = ["namespace = ?"]
    params: list[Any] = [namespace]
    if session is not None:
        where.append("session = ?")
        params.append(session)
    if page_type is not None:
        where.append("type = ?")
        params.append(page_type.value)
    if pinned_only:
        where.append("pinned = 1")
    if before is not None:
        where.append("rowid < ?")
        params.append(before)
    sql = f"SELECT {_PAGE_FIELDS} FROM pages WHERE {' AND '.join(where)} ORDER BY rowid DESC LIMIT ?"
    rows = await conn.all(sql, (*params, _limit(limit)))
    return [_page_row(row) for row in rows]


def _page_row(row: Any) -> PageRow:
    return PageRow(
        page_id=row["page_id"],
        session=row["session"],
        type=row["type"],
        role=row["role"],
        pinned=bool(row["pinned"]),
        importance=row["importance"],
        provenance=row["provenance"],
        created_at=row["created_at"],
        last_access=row["last_access"],
        access_count=row["access_count"],
        abstract=row["abstract"],
        tokens={
            "full": row["tokens_full"],
            "reduced": row["tokens_reduced"],
            "abstract": row["tokens_abstract"],
            "reference": row["tokens_reference"],
        },
        cursor=row["rowid"],
    )


async def mutations(conn: Reads, namespace: str, session: str, limit: int = MAX_ROWS) -> list[MutationRow]:
    """What happened to the session's working set, the newest first."""
    rows = await conn.all(_MUTATIONS, (namespace, session, _limit(limit)))
    return [MutationRow(**dict(row)) for row in rows]


async def bindings(conn: Reads, namespace: str, session: str, limit: int = MAX_ROWS) -> list[BindingRow]:
    """The session's bound values (`$vN`), the newest first."""
    rows = await conn.all(_BINDINGS, (namespace, session, _limit(limit)))
    return [
        BindingRow(
            ref=f"$v{row['seq']}",
            session=row["session"],
            tool=row["tool"],
            args=row["args"],
            value=row["value"],
            value_type=row["value_type"],
            turn=row["turn"],
            created_at=row["created_at"],
        )
        for row in rows
    ]


async def tools(conn: Reads, namespace: str, limit: int = MAX_ROWS) -> list[ToolRow]:
    """Each tool's calls and successes, the most recently used first."""
    rows = await conn.all(_TOOLS, (namespace, _limit(limit)))
    return [
        ToolRow(
            tool=row["tool"],
            calls=row["calls"],
            successes=row["successes"],
            mean_ms=row["duration_total"] / row["duration_count"] if row["duration_count"] else None,
            last_at=row["last_at"],
        )
        for row in rows
    ]


_VERSION = """
SELECT (SELECT pages FROM page_counts WHERE namespace = ?1),
       (SELECT max(seq) FROM mutation_log WHERE namespace = ?1),
       (SELECT max(last_access) FROM pages WHERE namespace = ?1),
       (SELECT max(last_at) FROM tool_stats WHERE namespace = ?1),
       (SELECT max(last_call_at) FROM sessions WHERE namespace = ?1)
"""


async def version(conn: Reads, namespace: str) -> str:
    """Changes whenever the namespace's memory does (a page written, read, forgotten, a working set
    changed, a tool outcome or a call recorded), so that a viewer can poll it cheaply."""
    row = await conn.one(_VERSION, (namespace,))
    return "/".join(str(value) for value in row) if row else ""


class VerdictRow(BaseModel):
    session: str
    turn: int
    tool: str
    verdict: str
    reasons: list[dict[str, Any]]
    at: float


_VERDICTS = """
SELECT session, turn, tool, verdict, reasons, at FROM guard_verdicts
WHERE namespace = ? AND session = ? ORDER BY rowid DESC LIMIT ?
"""


async def verdicts(conn: Reads, namespace: str, session: str, limit: int = MAX_ROWS) -> list[VerdictRow]:
    """The guards' latest verdicts on the session's calls, with their reasons, the newest first."""
    rows = await conn.all(_VERDICTS, (namespace, session, _limit(limit)))
    return [
        VerdictRow(
            session=row["session"],
            turn=row["turn"],
            tool=row["tool"],
            verdict=row["verdict"],
            reasons=json.loads(row["reasons"]),
            at=row["at"],
        )
        for row in rows
    ]
