"""The view's lists, walked a screen at a time by their cursors: every row once, in order, none cut
off silently, even when rows tie on the time they are ordered by (the test clock never moves)."""

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from memvm.engine import Engine, view
from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import NewPage, PageType, Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage

pytestmark = pytest.mark.anyio

NS = "default"
ROWS = 23  # not a multiple of the screen, so the last screen is a short one
SCREEN = 5


async def walk(engine: Engine, read: Callable[..., Awaitable[view.Screen[Any]]], *args: Any) -> list[Any]:
    """Every row of a list, following `next` until it is None."""
    rows: list[Any] = []
    before = None
    async with engine.db.read(NS) as conn:
        while True:
            screen = await read(conn, NS, *args, before=before, limit=SCREEN)
            assert len(screen.rows) <= SCREEN
            rows += screen.rows
            if screen.next is None:
                return rows
            assert len(screen.rows) == SCREEN
            before = screen.next


async def test_sessions_tied_in_time_page_apart_each_once(engine: Engine):
    names = [f"s{i:02d}" for i in range(ROWS)] + ["a/b", "z/"]
    for name in names:
        await engine.session(NS, name).ingest(messages=[IngestMessage(role=Role.USER, content="hi")])
    seen = [row.session for row in await walk(engine, view.sessions)]
    assert seen == sorted(names, reverse=True)


async def test_tools_tied_in_time_page_apart_each_once(engine: Engine):
    tools = [f"tool_{i:02d}" for i in range(ROWS)]
    for tool in tools:
        call = ToolOutcome(tool=tool, args={}, outcome=Outcome.SUCCESS, result="ok")
        await engine.session(NS, "s").record_tool_outcome(call=call)
    seen = [row.tool for row in await walk(engine, view.tools)]
    assert seen == sorted(tools, reverse=True)


async def test_pages_mutations_bindings_and_verdicts_page_newest_first(open_engine):
    engine = await open_engine(max_faults_per_turn=ROWS)
    for i in range(ROWS):
        note = NewPage(content=f"note number {i}", type=PageType.NOTE, provenance="user")
        await engine.session(NS, "s").remember(page=note, key=f"note-{i:02d}")
        await engine.session(NS, "s").page_fault(page_id=f"note-{i:02d}")
        await engine.session(NS, "s").bind_value(tool="price", args={"i": i}, value=1000 + i)
        await engine.session(NS, "s").check_tool_call(tool="book", args={"seat": i})

    pages = [row.page_id for row in await walk(engine, view.pages)]
    assert pages == [f"note-{i:02d}" for i in reversed(range(ROWS))]
    bound = [row.ref for row in await walk(engine, view.bindings, "s")]
    assert bound == [f"$v{i}" for i in range(ROWS, 0, -1)]
    judged = [row.tool for row in await walk(engine, view.verdicts, "s")]
    assert judged == ["book"] * ROWS
    changed = await walk(engine, view.mutations, "s")
    assert [row.seq for row in changed] == sorted((row.seq for row in changed), reverse=True)
    assert {row.page_id for row in changed if row.kind == "map"} == {f"note-{i:02d}" for i in range(ROWS)}


async def test_a_screen_is_at_most_two_hundred_rows_and_says_more_follow(engine: Engine):
    messages = [IngestMessage(role=Role.USER, content=f"line {i}") for i in range(view.MAX_ROWS + 1)]
    await engine.session(NS, "s").ingest(messages=messages)
    async with engine.db.read(NS) as conn:
        screen = await view.pages(conn, NS, limit=10_000)
        rest = await view.pages(conn, NS, before=screen.next, limit=10_000)
    assert len(screen.rows) == view.MAX_ROWS and screen.next is not None
    assert len(rest.rows) == 1 and rest.next is None


@pytest.mark.parametrize("before", ["abc", "-1", str(2**64), "", "1.5", " 5", "1_0", "nan/x", "-inf/"])
async def test_a_cursor_not_given_by_a_screen_is_refused(engine: Engine, before: str):
    async with engine.db.read(NS) as conn:
        with pytest.raises(InvalidArgument, match="cursor"):
            await view.pages(conn, NS, before=before or "x")
        with pytest.raises(InvalidArgument, match="cursor"):
            await view.sessions(conn, NS, before=before if "/" in before else before or "x")


async def test_a_large_bound_value_is_cut_to_what_a_row_shows(engine: Engine):
    await engine.session(NS, "s").bind_value(tool="fetch", args={"q": "x" * 2000}, value="v" * 100_000)
    async with engine.db.read(NS) as conn:
        (row,) = (await view.bindings(conn, NS, "s")).rows
    # Stored as JSON: the string's quotes are counted too.
    assert row.value.startswith('"' + "v" * (view.SHOWN_CHARS - 1)) and "100,002 characters" in row.value
    assert len(row.value) < view.SHOWN_CHARS + 100 and len(row.args) < view.SHOWN_CHARS + 100
