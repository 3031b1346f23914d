"""A page remembered with a time to live leaves every read when it expires, and a write deletes it."""

import pytest
from memvm.engine.errors import InvalidArgument, PageNotFound
from memvm.engine.models.pages import Level

from tests.conftest import NS, db_rows, note, user

pytestmark = pytest.mark.anyio


async def _remember_expiring(engine, clock, key="parking", ttl=60, pin=False):
    result = await engine.session(NS, "s").remember(
        page=note("Parked the car on level 3, bay 42", pinned=pin), key=key, ttl_seconds=ttl
    )
    assert result.expires_at == clock.now() + ttl
    return result


async def test_an_expired_page_leaves_search_manifest_and_working_set_at_once(engine, clock, db_url):
    await _remember_expiring(engine, clock)
    await engine.session(NS, "s").remember(page=note("The car is blue"), key="car")
    await engine.session(NS, "s").page_fault(page_id="parking", target_level=Level.FULL)
    found = await engine.session(NS, "s").search(query="parked car bay")
    assert "parking" in [hit.page_id for hit in found.results]
    clock.advance(61)
    found = await engine.session(NS, "s").search(query="parked car bay")
    assert "parking" not in [hit.page_id for hit in found.results]
    assert (await engine.session(NS, "s").search(query="parking")).results == []
    assert found.total_pages == 1
    memory = await engine.session(NS, "s").memory_map()
    assert all(entry.page_id != "parking" for entry in memory.view.entries)
    assert all(page.page_id != "parking" for page in memory.available)
    assert (memory.counts["pages"], memory.counts["session_pages"]) == (1, 1)
    with pytest.raises(PageNotFound):
        await engine.namespace(NS).get_page(page_id="parking")
    with pytest.raises(PageNotFound):
        await engine.session(NS, "s").page_fault(page_id="parking")
    # Gone for readers, still stored until a write deletes it.
    assert db_rows(db_url, "SELECT count(*) FROM pages WHERE page_id = 'parking'")[0][0] == 1


async def test_a_later_write_deletes_the_expired_page(engine, clock, db_url):
    await _remember_expiring(engine, clock)
    await engine.session(NS, "s").page_fault(page_id="parking", target_level=Level.FULL)
    clock.advance(61)
    await engine.session(NS, "s").ingest(messages=[user("where did I park?")])
    assert db_rows(db_url, "SELECT count(*) FROM pages WHERE page_id = 'parking'") == [(0,)]
    assert db_rows(
        db_url, "SELECT count(*) FROM working_set WHERE page_rowid NOT IN (SELECT rowid FROM pages)"
    ) == [(0,)]
    causes = db_rows(db_url, "SELECT kind, cause FROM mutation_log WHERE page_id = 'parking' ORDER BY seq")
    assert causes[-1] == ("forget", "expired")


async def test_a_page_is_live_until_its_expiry(engine, clock):
    await _remember_expiring(engine, clock, ttl=60)
    clock.advance(59)
    assert (await engine.namespace(NS).get_page(page_id="parking")).expires_at == clock.now() + 1
    assert [hit.page_id for hit in (await engine.session(NS, "s").search(query="parked")).results] == [
        "parking"
    ]


async def test_rewriting_without_ttl_makes_the_page_lasting(engine, clock):
    await _remember_expiring(engine, clock)
    again = await engine.session(NS, "s").remember(page=note("Parked on level 4"), key="parking")
    assert again.expires_at is None
    clock.advance(3600)
    assert (await engine.namespace(NS).get_page(page_id="parking")).levels[0] == "Parked on level 4"


async def test_a_key_whose_page_expired_starts_afresh(engine, clock):
    await _remember_expiring(engine, clock)
    clock.advance(61)
    fresh = await engine.session(NS, "s").remember(page=note("Parked on level 1"), key="parking")
    assert fresh.created and fresh.version == 1
    assert (await engine.namespace(NS).get_page(page_id="parking")).versions == []


async def test_collect_expired_deletes_every_expired_page(engine, clock, db_url):
    for n in range(3):
        await _remember_expiring(engine, clock, key=f"temp-{n}", ttl=10 + n)
    await engine.session(NS, "s").remember(page=note("lasting"), key="lasting")
    await engine.session("other", "s").remember(page=note("elsewhere"), key="x", ttl_seconds=5)
    clock.advance(11.5)
    assert await engine.collect_expired() == 3  # temp-0, temp-1 and other's x; temp-2 has 0.5 s left
    assert sorted(row[0] for row in db_rows(db_url, "SELECT page_id FROM pages")) == ["lasting", "temp-2"]
    clock.advance(1)
    assert await engine.collect_expired() == 1
    assert await engine.collect_expired() == 0


@pytest.mark.parametrize("ttl", [0, -5, 10 * 365 * 86_400 + 1])
async def test_a_ttl_out_of_range_is_refused_with_what_to_do(engine, ttl):
    with pytest.raises(InvalidArgument, match="omit it to keep the page"):
        await engine.session(NS, "s").remember(page=note("x"), key="k", ttl_seconds=ttl)
    with pytest.raises(PageNotFound):
        await engine.namespace(NS).get_page(page_id="k")
