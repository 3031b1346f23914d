"""The view's first screen: notes pinned first, conversations by title or first prompt with the
latest first, and a conversation read oldest first, each walked a screen at a time by its cursor."""

from pathlib import Path

import pytest
from memvm.engine import Engine, memory_screens
from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import NewPage, PageType, Role
from memvm.engine.models.writes import IngestMessage
from memvm.engine.operations.importers.formats import read_source

from tests.conftest import NS

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
SCREEN = 3


async def every(engine: Engine, read, *args, cursor: str = "before") -> list:
    """Every row of a screen list, following `next` until it is None."""
    rows: list = []
    at = None
    while True:
        async with engine.db.read(NS) as conn:
            screen = await read(conn, NS, *args, **{cursor: at}, limit=SCREEN)
        assert len(screen.rows) <= SCREEN
        rows += screen.rows
        if screen.next is None:
            return rows
        at = screen.next


def said(role: Role, content: str) -> IngestMessage:
    return IngestMessage(role=role, content=content)


async def test_notes_come_pinned_first_then_newest_and_leave_when_forgotten(engine: Engine):
    scope = engine.session(NS, "s")
    for i in range(7):
        await scope.remember(
            page=NewPage(content=f"note {i}", type=PageType.NOTE, provenance="user"), key=f"n{i}"
        )
    await scope.ingest(messages=[said(Role.USER, "a transcript line is no note")])
    for key in ("n1", "n4"):
        await scope.pin_page(page_id=key, pinned=True, place=False)
    await scope.forget(page_id="n6")
    rows = await every(engine, memory_screens.notes)
    assert [row.page_id for row in rows] == ["n4", "n1", "n5", "n3", "n2", "n0"]
    assert [row.pinned for row in rows] == [True, True, False, False, False, False]
    assert rows[0].text == "note 4" and rows[0].type == "note"


async def test_an_expired_note_is_not_listed(engine: Engine, clock):
    scope = engine.session(NS, "s")
    await scope.remember(page=NewPage(content="kept", type=PageType.NOTE, provenance="user"), key="kept")
    await scope.remember(
        page=NewPage(content="brief", type=PageType.NOTE, provenance="user"), key="brief", ttl_seconds=60
    )
    assert {row.page_id for row in await every(engine, memory_screens.notes)} == {"kept", "brief"}
    clock.advance(61)
    assert [row.page_id for row in await every(engine, memory_screens.notes)] == ["kept"]


async def test_imported_conversations_show_their_titles_and_read_oldest_first(engine: Engine):
    await read_source("chatgpt", FIXTURES / "chatgpt.json")(engine, NS)
    rows = await every(engine, memory_screens.conversations)
    titled = {row.title: row for row in rows}
    sourdough = titled["Sourdough starter help"]
    assert sourdough.session.startswith("chatgpt-") and sourdough.messages >= 2
    assert sourdough.started_at <= sourdough.last_at
    thread = await every(engine, memory_screens.thread, sourdough.session, cursor="after")
    assert len(thread) == sourdough.messages
    assert [message.created_at for message in thread] == sorted(message.created_at for message in thread)
    assert (
        thread[0].role == "user"
        and sourdough.first_line
        and thread[0].text.startswith(sourdough.first_line.rstrip("…"))
    )


async def test_a_hook_session_shows_its_project_and_first_prompt_and_the_latest_comes_first(
    engine: Engine, clock
):
    for i, project in enumerate(("/home/ana/garden", "/home/ana/taxes", "/home/ana/garden", "")):
        scope = engine.session(NS, f"session-{i}", project=project or None)
        await scope.ingest(messages=[said(Role.SYSTEM, "started"), said(Role.USER, f"first prompt {i}")])
        await scope.ingest(messages=[said(Role.ASSISTANT, f"answer {i}"), said(Role.USER, f"then {i}")])
        clock.advance(10)
    await engine.session(NS, "notes-only").remember(
        page=NewPage(content="a note is no conversation", type=PageType.NOTE, provenance="user")
    )
    rows = await every(engine, memory_screens.conversations)
    assert [row.session for row in rows] == ["session-3", "session-2", "session-1", "session-0"]
    assert [row.first_line for row in rows] == [f"first prompt {i}" for i in (3, 2, 1, 0)]
    assert [row.title for row in rows] == [None] * 4
    assert rows[1].project == "/home/ana/garden" and rows[0].project == ""
    assert rows[0].messages == 4


async def test_a_long_message_is_cut_in_the_thread_and_says_how_long_it_is(engine: Engine):
    long = "word " * 2_000
    await engine.session(NS, "s").ingest(messages=[said(Role.USER, long)])
    [message] = await every(engine, memory_screens.thread, "s", cursor="after")
    assert len(message.text) == memory_screens.MESSAGE_CHARS < message.chars


@pytest.mark.parametrize("cursor", ["x", "2/5", "1/", "/5", "1/-3"])
async def test_a_cursor_the_view_never_gave_is_refused(engine: Engine, cursor: str):
    async with engine.db.read(NS) as conn:
        with pytest.raises(InvalidArgument):
            await memory_screens.notes(conn, NS, before=cursor)


@pytest.mark.sqlite_only
async def test_the_first_screen_reads_notes_and_conversations_by_their_own_indexes(engine: Engine, db_path):
    """At 100,000 pages the first screen read every page for its notes (30 ms) and every
    transcript's row for its conversations (85 ms): each list has a partial index of its own, which
    a query of a whole session must not take instead of pages_by_session."""
    import sqlite3
    import time

    from memvm.engine.paging.manifest_pages import _COUNTS

    def plan(conn: sqlite3.Connection, sql: str, **params: object) -> str:
        return " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))

    with sqlite3.connect(db_path) as conn:
        conn.create_function("memvm_now", 0, time.time)
        notes = plan(
            conn,
            memory_screens._NOTES.texts["sqlite"],
            namespace=NS,
            before_pinned=2,
            before_rowid=0,
            limit=1,
        )
        listed = plan(
            conn,
            memory_screens._CONVERSATIONS.texts["sqlite"],
            namespace=NS,
            before_time=0.0,
            before_name="",
            limit=1,
        )
        counted = plan(conn, _COUNTS.texts["sqlite"], namespace=NS, session="s")
    assert "pages_remembered" in notes, notes
    assert "pages_transcripts" in listed, listed
    assert "pages_by_session (namespace=? AND session=?)" in counted, counted
