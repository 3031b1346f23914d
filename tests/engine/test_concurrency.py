"""Reads racing writes in one process, and writes cancelled half-way.

Each read transaction sees one snapshot, so a page that changes between two queries of the same
read (ranking, then snippets) can never make the read fail; a call cancelled mid-write leaves the
connection out of any transaction, and the next call works.
"""

import random
import sqlite3
import threading

import anyio
import pytest
from memvm.engine.models.pages import PageType

from tests.conftest import NS, note, query

pytestmark = pytest.mark.anyio


async def test_searches_racing_rewrites_and_forgets_of_their_page_never_fail(engine):
    await engine.session(NS, "s").remember(page=note("a lighthouse on the cape"), key="k")
    searches = 0

    async def rewrite() -> None:
        for round_ in range(150):
            if round_ % 3 == 2:
                await engine.session(NS, "s").forget(page_id="k")
            text = f"the lighthouse keeper, version {round_}"
            await engine.session(NS, "s").remember(page=note(text), key="k")

    async def search() -> None:
        nonlocal searches
        for _ in range(300):
            found = await engine.session(NS, "s").search(query="lighthouse keeper")
            assert all(hit.page_id == "k" for hit in found.results)
            searches += 1

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(rewrite)
            for _ in range(3):
                group.start_soon(search)
    assert searches == 900


async def test_reads_inside_one_read_transaction_see_one_snapshot(engine):
    await engine.session(NS, "s").remember(page=note("first"))
    count = query("SELECT count(*) FROM pages WHERE namespace = :namespace")
    async with engine.db.read(None) as conn:
        (before,) = await conn.one(count, namespace=NS)
        await engine.session(NS, "s").remember(page=note("second"))
        (during,) = await conn.one(count, namespace=NS)
    async with engine.db.read(None) as conn:
        (after,) = await conn.one(count, namespace=NS)
    assert (before, during, after) == (1, 1, 2)


async def test_a_write_cancelled_half_way_leaves_nothing_and_the_next_write_succeeds(engine):
    async def hold_open_write() -> None:
        async with engine.db.write() as conn:
            await conn.execute(
                query(
                    "INSERT INTO sessions (namespace, session, turn, faults_this_turn, turn_started_at, "
                    "last_call_at, created_at) VALUES (:namespace, 'half', 0, 0, 0, 0, 0)"
                ),
                namespace=NS,
            )
            await anyio.sleep_forever()

    with anyio.move_on_after(0.5):
        await hold_open_write()
    stored = await engine.session(NS, "s").remember(page=note("after the cancel"))
    async with engine.db.read(None) as conn:
        assert await conn.one("SELECT 1 FROM sessions WHERE session = 'half'") is None
        assert (
            await conn.one(query("SELECT 1 FROM pages WHERE page_id = :page_id"), page_id=stored.page_id)
            is not None
        )


async def test_tool_calls_cancelled_at_random_moments_never_break_the_next_one(engine):
    rng = random.Random(7)
    for attempt in range(60):
        with anyio.move_on_after(rng.uniform(0, 0.02)):
            await engine.session(NS, "s").remember(page=note(f"note {attempt} " * 50, type=PageType.CLAIM))
        with anyio.move_on_after(rng.uniform(0, 0.02)):
            await engine.session(NS, "s").search(query=f"note {attempt}")
    final = await engine.session(NS, "s").remember(page=note("the last word"))
    found = await engine.session(NS, "s").search(query="last word")
    assert found.results[0].page_id == final.page_id
    async with engine.db.read(None) as conn:
        if engine.db.backend == "sqlite":
            assert (await conn.one("PRAGMA integrity_check"))[0] == "ok"
        # Nothing half-written: the kept counts and the search index agree with the pages.
        counted = await conn.one(
            query("SELECT pages FROM page_counts WHERE namespace = :namespace"), namespace=NS
        )
        stored = await conn.one(
            query("SELECT count(*) FROM pages WHERE namespace = :namespace"), namespace=NS
        )
        assert counted[0] == stored[0]
        if engine.db.backend == "postgresql":
            unindexed = await conn.one(
                "SELECT count(*) FROM pages p WHERE NOT EXISTS "
                "(SELECT 1 FROM page_terms t WHERE t.page_rowid = p.rowid)"
            )
            assert unindexed[0] == 0


@pytest.mark.sqlite_only
async def test_a_write_cancelled_while_it_waits_for_the_lock_does_not_keep_the_lock(engine, db_path):
    # Another program holds the write lock; our write is cancelled while SQLite waits for it, and
    # the lock is freed just after. The BEGIN that then succeeds on the connection's thread must
    # not leave a transaction open behind the caller's back.
    other = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.05, other.rollback)
    release.start()
    try:
        with anyio.move_on_after(0.02):
            await engine.session(NS, "s").remember(page=note("cancelled"))
    finally:
        release.join()
        other.close()
    stored = await engine.session(NS, "s").remember(page=note("next"))
    with sqlite3.connect(db_path) as check:
        check.execute("PRAGMA busy_timeout=5000")
        assert (
            check.execute("SELECT count(*) FROM pages WHERE page_id = ?", (stored.page_id,)).fetchone()[0]
            == 1
        )
        # Nobody holds the write lock any more.
        check.execute("BEGIN IMMEDIATE")
        check.execute("ROLLBACK")
