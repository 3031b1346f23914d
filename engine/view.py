"""What the browser view reads: sessions, pages, the mutation log, bindings, guard verdicts and tool
statistics, a screen at a time, each screen one bounded query on an index.

Every list is paged by a key (keyset), never by an offset: a screen says where the next one starts
(`Screen.next`, passed back as `before`), so the cost of a screen does not grow with how far down
the list it is, and no list is ever cut short without saying so.
"""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import PageType
from memvm.engine.paging.pages import expired_count_sql
from memvm.engine.storage.api import Reads
from memvm.engine.storage.statements import Statement, in_list, statement, template
from pydantic import BaseModel

# The most rows one screen asks for.
MAX_ROWS = 200

Row = TypeVar("Row")
Shown = TypeVar("Shown")


@dataclass(frozen=True)
class Screen(Generic[Row]):
    """One screen of a list, and where the next one starts (None at the end)."""

    rows: list[Row]
    next: str | None

    def map(self, dress: Callable[[Row], Shown]) -> "Screen[Shown]":
        return Screen([dress(row) for row in self.rows], self.next)


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
    expires_at: float | None = None


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


# Ordered by (last_call_at, session) so that sessions active at the same instant still page apart.
_SESSIONS = statement(
    "view.sessions",
    """
SELECT s.session, s.turn, s.created_at, s.last_call_at,
       (SELECT count(*) FROM pages p WHERE p.namespace = s.namespace AND p.session = s.session) AS pages
FROM sessions s WHERE s.namespace = :namespace AND (s.last_call_at, s.session) < (:before_time, :before_name)
ORDER BY s.last_call_at DESC, s.session DESC LIMIT :limit
""",
)

_PAGE_FIELDS = """
rowid, page_id, session, type, role, pinned, importance, provenance, created_at, last_access,
access_count, abstract, tokens_full, tokens_reduced, tokens_abstract, tokens_reference, expires_at
"""

# A screen of live pages, with what narrows it ({filters}: each clause with its leading AND).
_PAGES = template(
    "view.pages",
    f"SELECT {_PAGE_FIELDS} FROM live_pages WHERE namespace = :namespace {{filters}} ORDER BY rowid DESC LIMIT :limit",
    filters="AND session = :session AND type = :type AND pinned = 1 AND rowid < :before",
)

_MUTATIONS = statement(
    "view.mutations",
    """
SELECT seq, session, page_id, turn, kind, level_before, level_after, actor, cause, at
FROM mutation_log WHERE namespace = :namespace AND session = :session AND seq < :before
ORDER BY seq DESC LIMIT :limit
""",
)

# Values and arguments cut to what a table row can show; the export has them whole.
SHOWN_CHARS = 500

_BINDINGS = statement(
    "view.bindings",
    f"""
SELECT seq, session, tool, substr(args, 1, {SHOWN_CHARS}) AS args, length(args) AS args_chars,
       substr(value, 1, {SHOWN_CHARS}) AS value, length(value) AS value_chars, value_type, turn, created_at
FROM bindings WHERE namespace = :namespace AND session = :session AND seq < :before
ORDER BY seq DESC LIMIT :limit
""",
)

_TOOLS = statement(
    "view.tools",
    """
SELECT tool, calls, successes, duration_total, duration_count, last_at
FROM tool_stats WHERE namespace = :namespace AND (last_at, tool) < (:before_time, :before_name)
ORDER BY last_at DESC, tool DESC LIMIT :limit
""",
)

# Past every real key: the first screen starts here.
_TOP_INT = 2**63 - 1
_TOP_TIME = float("inf")


def _limit(limit: int) -> int:
    return max(1, min(limit, MAX_ROWS))


def _screen(rows: list[Row], limit: int, key: Any) -> Screen[Row]:
    """The first `limit` rows, and the cursor after the last of them when more were found."""
    if len(rows) <= limit:
        return Screen(rows, None)
    return Screen(rows[:limit], key(rows[limit - 1]))


async def read_screen(
    conn: Reads, sql: Statement, limit: int, key: Callable[[Any], str], **params: Any
) -> Screen[Any]:
    """One screen of `sql`'s rows (it takes `:limit`), and the cursor `key` gives after its last."""
    limit = _limit(limit)
    return _screen(await conn.all(sql, limit=limit + 1, **params), limit, key)


def int_cursor(before: str | None) -> int:
    if before is None:
        return _TOP_INT
    key = int(before) if before.isascii() and before.isdigit() else None
    if key is None or not 0 <= key <= _TOP_INT:
        raise InvalidArgument("before must be the cursor the previous screen gave.")
    return key


def _time_key(before: str | None) -> tuple[float, str]:
    """A (time, name) cursor, written as `time/name` (a float's repr has no slash)."""
    if before is None:
        return _TOP_TIME, ""
    at, slash, name = before.partition("/")
    try:
        time = float(at)
    except ValueError:
        time = None
    if not slash or time is None or not math.isfinite(time):
        raise InvalidArgument("before must be the cursor the previous screen gave.")
    return time, name


async def by_recency(
    conn: Reads, sql: Statement, time: str, name: str, namespace: str, before: str | None, limit: int
) -> Screen[Any]:
    """One screen of named rows, the most recent first by (`time`, `name`): `sql` takes
    `:before_time` and `:before_name`."""
    after_time, after_name = _time_key(before)
    return await read_screen(
        conn,
        sql,
        limit,
        lambda row: f"{row[time]!r}/{row[name]}",
        namespace=namespace,
        before_time=after_time,
        before_name=after_name,
    )


async def sessions(
    conn: Reads, namespace: str, *, before: str | None = None, limit: int = MAX_ROWS
) -> Screen[SessionRow]:
    """The namespace's sessions, the most recently active first."""
    screen = await by_recency(conn, _SESSIONS, "last_call_at", "session", namespace, before, limit)
    return screen.map(lambda row: SessionRow(**dict(row)))


async def pages(
    conn: Reads,
    namespace: str,
    *,
    session: str | None = None,
    page_type: PageType | None = None,
    pinned_only: bool = False,
    before: str | None = None,
    limit: int = 50,
) -> Screen[PageRow]:
    """One screen of live pages, newest first, after the one whose cursor is `before`."""
    where = []
    params: dict[str, Any] = {}
    if session is not None:
        where.append("AND session = :session")
        params["session"] = session
    if page_type is not None:
        where.append("AND type = :type")
        params["type"] = page_type.value
    if pinned_only:
        where.append("AND pinned = 1")
    if before is not None:
        where.append("AND rowid < :before")
        params["before"] = int_cursor(before)
    sql = _PAGES.fill(filters=" ".join(where))
    screen = await read_screen(conn, sql, limit, lambda row: str(row["rowid"]), namespace=namespace, **params)
    return screen.map(_page_row)


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
        expires_at=row["expires_at"],
    )


def _shown(text: str, length: int) -> str:
    return text if length <= SHOWN_CHARS else f"{text}… ({length:,} characters; the export has it all)"


_PAGE_COUNT = statement(
    "view.page count",
    f"""
SELECT coalesce((SELECT pages FROM page_counts WHERE namespace = :namespace), 0)
       - {expired_count_sql(":namespace")} AS pages""",
)


async def page_count(conn: Reads, namespace: str) -> int:
    """How many live pages the namespace holds (kept by triggers: no scan)."""
    row = await conn.one(_PAGE_COUNT, namespace=namespace)
    return int(row["pages"]) if row else 0


_PINNED_AMONG = template(
    "view.pinned among",
    "SELECT page_id FROM pages WHERE namespace = :namespace AND pinned = 1 AND page_id IN ({marks})",
    marks=in_list(["", ""])[0],
)


async def pinned_among(conn: Reads, namespace: str, page_ids: list[str]) -> set[str]:
    """Which of `page_ids` are pinned (search results do not say)."""
    return {row["page_id"] for row in await conn.all_in(_PINNED_AMONG, page_ids, namespace=namespace)}


async def _session_log(
    conn: Reads, sql: Statement, key: str, namespace: str, session: str, before: str | None, limit: int
) -> Screen[Any]:
    """One screen of a session's log, newest first by the integer column `key`."""
    return await read_screen(
        conn,
        sql,
        limit,
        lambda row: str(row[key]),
        namespace=namespace,
        session=session,
        before=int_cursor(before),
    )


async def mutations(
    conn: Reads, namespace: str, session: str, *, before: str | None = None, limit: int = MAX_ROWS
) -> Screen[MutationRow]:
    """What happened to the session's working set, the newest first."""
    screen = await _session_log(conn, _MUTATIONS, "seq", namespace, session, before, limit)
    return screen.map(lambda row: MutationRow(**dict(row)))


async def bindings(
    conn: Reads, namespace: str, session: str, *, before: str | None = None, limit: int = MAX_ROWS
) -> Screen[BindingRow]:
    """The session's bound values (`$vN`), the newest first."""
    screen = await _session_log(conn, _BINDINGS, "seq", namespace, session, before, limit)
    return screen.map(
        lambda row: BindingRow(
            ref=f"$v{row['seq']}",
            session=row["session"],
            tool=row["tool"],
            args=_shown(row["args"], row["args_chars"]),
            value=_shown(row["value"], row["value_chars"]),
            value_type=row["value_type"],
            turn=row["turn"],
            created_at=row["created_at"],
        )
    )


async def tools(
    conn: Reads, namespace: str, *, before: str | None = None, limit: int = MAX_ROWS
) -> Screen[ToolRow]:
    """Each tool's calls and successes, the most recently used first."""
    screen = await by_recency(conn, _TOOLS, "last_at", "tool", namespace, before, limit)
    return screen.map(
        lambda row: ToolRow(
            tool=row["tool"],
            calls=row["calls"],
            successes=row["successes"],
            mean_ms=row["duration_total"] / row["duration_count"] if row["duration_count"] else None,
            last_at=row["last_at"],
        )
    )


_VERSION = statement(
    "view.version",
    """
SELECT (SELECT pages FROM page_counts WHERE namespace = :namespace),
       (SELECT max(seq) FROM mutation_log WHERE namespace = :namespace),
       (SELECT max(last_access) FROM pages WHERE namespace = :namespace),
       (SELECT max(last_at) FROM tool_stats WHERE namespace = :namespace),
       (SELECT max(last_call_at) FROM sessions WHERE namespace = :namespace)
""",
)


async def version(conn: Reads, namespace: str) -> str:
    """Changes whenever the namespace's memory does (a page written, read, forgotten, a working set
    changed, a tool outcome or a call recorded), so that a viewer can poll it cheaply."""
    row = await conn.one(_VERSION, namespace=namespace)
    return "/".join(str(value) for value in row) if row else ""


class VerdictRow(BaseModel):
    session: str
    turn: int
    tool: str
    verdict: str
    reasons: list[dict[str, Any]]
    at: float


_VERDICTS = statement(
    "view.verdicts",
    """
SELECT rowid, session, turn, tool, verdict, reasons, at FROM guard_verdicts
WHERE namespace = :namespace AND session = :session AND rowid < :before ORDER BY rowid DESC LIMIT :limit
""",
)


async def verdicts(
    conn: Reads, namespace: str, session: str, *, before: str | None = None, limit: int = MAX_ROWS
) -> Screen[VerdictRow]:
    """The guards' latest verdicts on the session's calls, with their reasons, the newest first."""
    screen = await _session_log(conn, _VERDICTS, "rowid", namespace, session, before, limit)
    return screen.map(
        lambda row: VerdictRow(
            session=row["session"],
            turn=row["turn"],
            tool=row["tool"],
            verdict=row["verdict"],
            reasons=json.loads(row["reasons"]),
            at=row["at"],
        )
    )
