"""A person's memory as the browser view's first screen shows it: the notes that were remembered
(pinned first), and the conversations, each by its title or first words, read as a thread oldest
first. Paged by key like every screen of the view (view.py).

A conversation is a session that holds transcript pages. Its date is its last message's, which for
an imported conversation is when it was had, not when it was imported; its title is the one an
import kept (ChatGPT's, Claude's), and a session without one (a host's hooks, an agent loop) is
shown by its project and its first prompt.
"""

import json
from typing import Any

from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import REMEMBERED_TYPES, PageType, Role
from memvm.engine.paging.history_write import CONVERSATION
from memvm.engine.storage.api import Reads
from memvm.engine.storage.statements import in_list, statement, template
from memvm.engine.view import Screen, by_recency, int_cursor, read_screen
from pydantic import BaseModel

# A message in a thread is shown up to this many characters; the page itself has it whole.
MESSAGE_CHARS = 4_000
# The first prompt shown for a conversation without a title.
FIRST_LINE_CHARS = 200


class NoteRow(BaseModel):
    page_id: str
    type: str
    pinned: bool
    created_at: float
    expires_at: float | None
    project: str
    text: str  # the note's abstract: what a list line can show


class ConversationRow(BaseModel):
    session: str
    title: str | None  # kept by an import; None for a session of a host or an agent
    first_line: str  # the first thing the user said in it ("" where the user said nothing)
    project: str
    started_at: float
    last_at: float
    messages: int


class MessageRow(BaseModel):
    page_id: str
    role: str | None
    type: str
    created_at: float
    text: str
    chars: int  # the whole message's length: more than `text` holds when it was cut


_REMEMBERED = ", ".join(f"'{kind.value}'" for kind in sorted(REMEMBERED_TYPES))

# Pinned first, then newest; the cursor is (pinned, rowid) of the last note shown.
_NOTES = statement(
    "memory screens.notes",
    f"""
SELECT rowid, page_id, type, pinned, created_at, expires_at, project, abstract AS text
FROM live_pages WHERE namespace = :namespace AND type IN ({_REMEMBERED})
AND (pinned, rowid) < (:before_pinned, :before_rowid)
ORDER BY pinned DESC, rowid DESC LIMIT :limit
""",
)

# The sessions holding transcript pages, the one with the latest message first.
_CONVERSATIONS = statement(
    "memory screens.conversations",
    f"""
SELECT session, min(created_at) AS started_at, max(created_at) AS last_at, count(*) AS messages,
       min(rowid) AS first_rowid
FROM live_pages WHERE namespace = :namespace AND type = '{PageType.TRANSCRIPT.value}'
GROUP BY session
HAVING (max(created_at), session) < (:before_time, :before_name)
ORDER BY last_at DESC, session DESC LIMIT :limit
""",
)

# Each listed session's first page (its title and project are kept there) and the first thing the
# user said in it: read from the session's first page on, in order, so that only the pages before
# the first prompt are read, whatever the session's length.
_OPENINGS = template(
    "memory screens.openings",
    f"""
SELECT o.session, o.metadata, o.project, (
    SELECT p.abstract FROM live_pages p
    WHERE p.namespace = o.namespace AND p.session = o.session AND p.rowid >= o.rowid
    AND p.type = '{PageType.TRANSCRIPT.value}' AND p.role = '{Role.USER.value}'
    ORDER BY p.rowid LIMIT 1
) AS first_prompt
FROM live_pages o WHERE o.namespace = :namespace AND o.rowid IN ({{marks}})""",
    marks=in_list([0, 0])[0],
)

# A session's transcript and tool results, oldest first, after the cursor (a rowid).
_THREAD = statement(
    "memory screens.thread",
    f"""
SELECT p.rowid, p.page_id, p.role, p.type, p.created_at, substr(t.content, 1, {MESSAGE_CHARS}) AS text,
       length(t.content) AS chars
FROM live_pages p JOIN page_texts t ON t.rowid = p.rowid
WHERE p.namespace = :namespace AND p.session = :session
AND p.type IN ('{PageType.TRANSCRIPT.value}', '{PageType.TOOL_RESULT.value}') AND p.rowid > :after
ORDER BY p.rowid LIMIT :limit
""",
)


async def notes(
    conn: Reads, namespace: str, *, before: str | None = None, limit: int = 50
) -> Screen[NoteRow]:
    """One screen of what was remembered: pinned notes first, then the newest."""
    pinned, rowid = _note_cursor(before)
    screen = await read_screen(
        conn,
        _NOTES,
        limit,
        lambda row: f"{int(row['pinned'])}/{row['rowid']}",
        namespace=namespace,
        before_pinned=pinned,
        before_rowid=rowid,
    )
    return screen.map(lambda row: NoteRow.model_validate(dict(row)))


async def conversations(
    conn: Reads, namespace: str, *, before: str | None = None, limit: int = 50
) -> Screen[ConversationRow]:
    """One screen of conversations, the one with the latest message first."""
    screen = await by_recency(conn, _CONVERSATIONS, "last_at", "session", namespace, before, limit)
    firsts = [row["first_rowid"] for row in screen.rows]
    openings = {row["session"]: row for row in await conn.all_in(_OPENINGS, firsts, namespace=namespace)}
    shown = []
    for row in screen.rows:
        opening = openings.get(row["session"])
        prompt = opening["first_prompt"] if opening else None
        shown.append(
            ConversationRow(
                session=row["session"],
                title=_title(opening["metadata"]) if opening else None,
                first_line=_cut(prompt, FIRST_LINE_CHARS) if prompt is not None else "",
                project=opening["project"] if opening else "",
                started_at=row["started_at"],
                last_at=row["last_at"],
                messages=int(row["messages"]),
            )
        )
    return Screen(shown, screen.next)


async def thread(
    conn: Reads, namespace: str, session: str, *, after: str | None = None, limit: int = 50
) -> Screen[MessageRow]:
    """One screen of a conversation, oldest message first, after the one whose cursor is `after`."""
    start = 0 if after is None else int_cursor(after)
    key = lambda row: str(row["rowid"])  # noqa: E731
    screen = await read_screen(conn, _THREAD, limit, key, namespace=namespace, session=session, after=start)
    return screen.map(lambda row: MessageRow.model_validate(dict(row)))


def _note_cursor(before: str | None) -> tuple[int, int]:
    """A (pinned, rowid) cursor, written as `pinned/rowid`."""
    if before is None:
        return 2, int_cursor(None)  # past every pinned flag (0 or 1)
    pinned, slash, rowid = before.partition("/")
    if not slash or pinned not in ("0", "1"):
        raise InvalidArgument("before must be the cursor the previous screen gave.")
    return int(pinned), int_cursor(rowid)


def _title(metadata: Any) -> str | None:
    try:
        title = json.loads(metadata).get(CONVERSATION)
    except (TypeError, ValueError, AttributeError):
        return None
    return title if isinstance(title, str) and title.strip() else None


def _cut(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"
