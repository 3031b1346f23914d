"""Storage faults through the MCP client: a full quota, another process's lock. Each gives a tool
error the model can act on, loses nothing committed, and clears once the cause is gone."""

import sqlite3

import anyio
import pytest
from memvm.engine.config import EngineConfig

from tests.conftest import db_rows, stored_state, write_lock_held
from tests.server.conftest import call, call_error, read

pytestmark = pytest.mark.anyio


@pytest.mark.sqlite_only  # a quota caps a SQLite file; PostgreSQL refuses max_db_mb (see test_postgres)
async def test_a_full_database_refuses_writes_keeps_what_it_has_and_recovers_after_forget(
    connect, db_path, report_figure
):
    async with connect(engine=EngineConfig(max_db_mb=1)) as client:
        kept = []
        for i in range(200):
            result = await client.call_tool("remember", {"content": f"report {i}: " + "lorem ipsum " * 1500})
            if result.is_error:
                message = result.content[0].text
                break
            kept.append(result.structured_content["page_id"])
        else:
            pytest.fail("a 1 MiB quota never filled")
        assert message.startswith("Storage is full, so nothing was saved")
        assert len(kept) >= 3
        for i, page_id in enumerate(kept):  # every acknowledged page is still there, whole
            assert f"report {i}: lorem ipsum" in await read(client, f"memvm://pages/{page_id}")
        found = await call(client, "search_pages", query="report lorem", limit=50)
        assert found["total_pages"] == len(kept)
        for page_id in kept[:3]:
            await call(client, "forget", page_id=page_id)
        stored = await call(client, "remember", content="after cleaning up: the quota has room again")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    report_figure(
        f"diskfull: acked={len(kept)} lost=0 error=storage_full recovered={bool(stored['page_id'])}"
    )


@pytest.mark.sqlite_only
async def test_a_file_already_over_the_cap_opens_serves_reads_and_reuses_what_forget_frees(connect, db_path):
    async with connect() as client:  # filled by a server without a cap
        kept = [
            (await call(client, "remember", content=f"report {i}: " + "lorem ipsum " * 1500))["page_id"]
            for i in range(40)
        ]
    over = db_path.stat().st_size
    assert over > 2**20
    async with connect(engine=EngineConfig(max_db_mb=1)) as client:
        page = await read(client, f"memvm://pages/{kept[0]}")
        found = await call(client, "search_pages", query="report lorem", limit=50)
        refused = await call_error(client, "remember", content="more: " + "dolor sit amet " * 1500)
        for page_id in kept[:3]:
            await call(client, "forget", page_id=page_id)
        stored = await call(client, "remember", content="after cleaning up: " + "dolor sit amet " * 1500)
    assert "report 0: lorem ipsum" in page and found["total_pages"] == len(kept)
    assert refused.startswith("Storage is full, so nothing was saved")
    assert stored["page_id"]
    with sqlite3.connect(db_path) as conn:  # the last write went into the room forget freed
        pages, page_size = (
            conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size")
        )
    assert pages * page_size <= over


async def embedded(db_url: str) -> None:
    for _ in range(600):
        if db_rows(db_url, "SELECT count(*) FROM pages_to_embed")[0][0] == 0:
            return
        await anyio.sleep(0.1)
    raise AssertionError("the server embedded nothing in a minute")


async def test_a_lock_held_by_another_process_is_a_retry_error_and_reads_go_on(
    connect, db_url, report_figure
):
    async with connect(engine=EngineConfig(busy_timeout_ms=100)) as client:
        before = await call(client, "remember", content="the boiler was serviced in March", key="boiler")
        # The server stores the page's vector in the background: let it, before the lock is taken
        # in this process (the lock holder blocks this event loop, which the server runs in too).
        await embedded(db_url)
        with write_lock_held(db_url):
            message = await call_error(client, "remember", content="this waits on the lock")
            found = await call(client, "search_pages", query="boiler serviced")
        after = await call(client, "remember", content="this goes through once the lock is gone")
        assert await call(client, "page_fault", page_id=before["page_id"], target_level=0)
    assert message == "Storage is busy with another writer; retry the same call in a moment."
    assert [hit["page_id"] for hit in found["results"]] == ["boiler"]
    report_figure(f"locked: error=storage_busy reads_served=1 recovered={bool(after['page_id'])}")


async def test_a_read_only_database_serves_reads_refuses_writes_and_changes_nothing(
    connect, db_url, report_figure
):
    async with connect() as client:
        await call(client, "remember", content="the spare key is under the blue pot", key="spare-key")
    before = stored_state(db_url)
    async with connect(engine=EngineConfig(read_only=True)) as client:
        found = await call(client, "search_pages", query="spare key")
        page = await read(client, "memvm://pages/spare-key")
        message = await call_error(client, "remember", content="this cannot be stored")
    assert [hit["page_id"] for hit in found["results"]] == ["spare-key"]
    assert "under the blue pot" in page
    assert message == "This memory is read-only, so nothing was saved; answer without storing."
    assert stored_state(db_url) == before
    async with connect() as client:  # writable again once opened without read_only
        stored = await call(client, "remember", content="a new note")
    report_figure(
        f"readonly: reads_served=2 error=storage_read_only unchanged=True recovered={bool(stored['page_id'])}"
    )


@pytest.mark.sqlite_only
async def test_at_the_quota_every_forget_works_and_what_it_frees_takes_writes_again(connect, db_path):
    async with connect(engine=EngineConfig(max_db_mb=1)) as client:
        kept = []
        for i in range(2000):
            content = f"note {i}: " + f"the shed key {i} is blue " * 40
            result = await client.call_tool("remember", {"content": content})
            if result.is_error:
                break
            kept.append(result.structured_content["page_id"])
        assert result.is_error and result.content[0].text.startswith("Storage is full")
        forgotten = [await call(client, "forget", page_id=page_id) for page_id in kept[:40]]
        stored = await call(client, "remember", content="after forgetting: room again")
    assert all(done["deleted"] for done in forgotten)
    assert stored["page_id"]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
