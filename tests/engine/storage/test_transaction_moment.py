"""Which pages are gone is one definition, the live_pages and expired_pages views, judged at the
moment each transaction began: every query of one transaction agrees, and no caller passes a time."""

import re

import pytest

from tests.conftest import NS, backend_of, db_rows, note

pytestmark = pytest.mark.anyio


async def test_a_transaction_judges_expiry_at_the_moment_it_began(engine, clock):
    await engine.session(NS, "s").remember(page=note("the door code is 4711"), key="door", ttl_seconds=60)
    await engine.session(NS, "s").remember(page=note("the wifi is called attic"), key="wifi")
    live = "SELECT page_id FROM live_pages WHERE namespace = ? ORDER BY page_id"
    expired = "SELECT page_id FROM expired_pages WHERE namespace = ?"
    async with engine.db.read(NS) as conn:
        assert conn.namespace == NS and conn.now == clock.now()
        clock.advance(61)
        # The clock moved on inside the transaction: its queries still see the moment it began.
        assert [row["page_id"] for row in await conn.all(live, (NS,))] == ["door", "wifi"]
        assert await conn.all(expired, (NS,)) == []
    async with engine.db.read(NS) as conn:
        assert [row["page_id"] for row in await conn.all(live, (NS,))] == ["wifi"]
        assert [row["page_id"] for row in await conn.all(expired, (NS,))] == ["door"]
    async with engine.db.write(NS) as conn:
        assert conn.now == clock.now() and [row["page_id"] for row in await conn.all(expired, (NS,))] == [
            "door"
        ]


async def test_a_connection_that_never_set_a_moment_is_told_so_rather_than_guessing(engine):
    await engine.session(NS, "s").remember(page=note("the door code is 4711"), ttl_seconds=60)
    url = engine.db.target
    says = "memvm_now" if backend_of(url) == "sqlite" else "memvm.now"
    with pytest.raises(Exception, match=re.escape(says)):
        db_rows(url, "SELECT count(*) FROM live_pages")
    assert db_rows(url, "SELECT count(*) FROM pages") == [(1,)]
