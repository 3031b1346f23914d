"""Rewriting a keyed page keeps what it said before; only the newest is searched and mapped."""

import pytest
from memvm.engine.errors import PageNotFound
from memvm.engine.models.pages import Level

from tests.conftest import NS, db_rows, note

pytestmark = pytest.mark.anyio


async def test_a_rewrite_keeps_the_earlier_content_as_a_superseded_version(engine, clock):
    written = clock.now()
    first = await engine.session(NS, "s").remember(page=note("Lives in Paris"), key="home")
    clock.advance(60)
    second = await engine.session(NS, "s").remember(page=note("Lives in Berlin"), key="home")
    clock.advance(60)
    third = await engine.session(NS, "s").remember(page=note("Lives in Lisbon"), key="home")
    assert (first.version, second.version, third.version) == (1, 2, 3)
    page = await engine.namespace(NS).get_page(page_id="home")
    assert page.levels[Level.FULL] == "Lives in Lisbon" and page.version == 3
    assert [(v.version, v.content) for v in page.versions] == [(1, "Lives in Paris"), (2, "Lives in Berlin")]
    assert [(v.written_at, v.superseded_at) for v in page.versions] == [
        (written, written + 60),
        (written + 60, written + 120),
    ]


async def test_rewriting_with_the_same_content_adds_no_version(engine):
    await engine.session(NS, "s").remember(page=note("Prefers tea"), key="drink")
    again = await engine.session(NS, "s").remember(page=note("Prefers tea", importance=0.9), key="drink")
    assert again.version == 1 and not again.created
    assert (await engine.namespace(NS).get_page(page_id="drink")).versions == []


async def test_search_finds_only_the_newest_content(engine):
    await engine.session(NS, "s").remember(page=note("Works at Initech as a tester"), key="job")
    await engine.session(NS, "s").remember(page=note("Works at Globex as a manager"), key="job")
    stale = await engine.session(NS, "s").search(query="Initech tester")
    assert stale.results == []
    fresh = await engine.session(NS, "s").search(query="Globex manager")
    assert [hit.page_id for hit in fresh.results] == ["job"] and "Globex" in fresh.results[0].snippet


async def test_only_the_newest_content_is_mapped(engine):
    await engine.session(NS, "s").remember(page=note("Old plan: ship in May"), key="plan")
    await engine.session(NS, "s").remember(page=note("New plan: ship in June"), key="plan")
    await engine.session(NS, "s").page_fault(page_id="plan", target_level=Level.FULL)
    lines = [entry.line for entry in (await engine.session(NS, "s").working_set()).entries]
    assert len(lines) == 1 and "June" in lines[0] and "May" not in lines[0]


async def test_versions_kept_is_a_bound_oldest_dropped_first(open_engine):
    engine = await open_engine(versions_kept=2)
    for n in range(1, 6):
        await engine.session(NS, "s").remember(page=note(f"count is {n}"), key="counter")
    page = await engine.namespace(NS).get_page(page_id="counter")
    assert page.version == 5
    assert [(v.version, v.content) for v in page.versions] == [(3, "count is 3"), (4, "count is 4")]


async def test_forget_takes_the_versions_with_the_page(engine, db_url):
    await engine.session(NS, "s").remember(page=note("first draft"), key="draft")
    await engine.session(NS, "s").remember(page=note("second draft"), key="draft")
    assert db_rows(db_url, "SELECT count(*) FROM page_versions")[0][0] == 1
    await engine.session(NS, "s").forget(page_id="draft")
    assert db_rows(db_url, "SELECT count(*) FROM page_versions")[0][0] == 0
    with pytest.raises(PageNotFound):
        await engine.namespace(NS).get_page(page_id="draft")
