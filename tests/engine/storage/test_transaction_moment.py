"""Which pages are gone is one definition, the live_pages and expired_pages views, judged at the
moment each transaction began: every query of one transaction agrees, and no caller passes a time."""

import re
from pathlib import Path

import pytest

from tests.conftest import NS, backend_of, db_rows, note, query

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


async def test_a_transaction_judges_expiry_at_the_moment_it_began(engine, clock):
    await engine.session(NS, "s").remember(page=note("the door code is 4711"), key="door", ttl_seconds=60)
    await engine.session(NS, "s").remember(page=note("the wifi is called attic"), key="wifi")
    live = query("SELECT page_id FROM live_pages WHERE namespace = :namespace ORDER BY page_id")
    expired = query("SELECT page_id FROM expired_pages WHERE namespace = :namespace")
    async with engine.db.read(NS) as conn:
        assert conn.namespace == NS and conn.now == clock.now()
        clock.advance(61)
        # The clock moved on inside the transaction: its queries still see the moment it began.
        assert [row["page_id"] for row in await conn.all(live, namespace=NS)] == ["door", "wifi"]
        assert await conn.all(expired, namespace=NS) == []
    async with engine.db.read(NS) as conn:
        assert [row["page_id"] for row in await conn.all(live, namespace=NS)] == ["wifi"]
        assert [row["page_id"] for row in await conn.all(expired, namespace=NS)] == ["door"]
    async with engine.db.write(NS) as conn:
        assert conn.now == clock.now() and [
            row["page_id"] for row in await conn.all(expired, namespace=NS)
        ] == ["door"]


async def test_a_connection_that_never_set_a_moment_is_told_so_rather_than_guessing(engine):
    await engine.session(NS, "s").remember(page=note("the door code is 4711"), ttl_seconds=60)
    url = engine.db.target
    says = "memvm_now" if backend_of(url) == "sqlite" else "memvm.now"
    with pytest.raises(Exception, match=re.escape(says)):
        db_rows(url, "SELECT count(*) FROM live_pages")
    assert db_rows(url, "SELECT count(*) FROM pages") == [(1,)]


# Expiry compared with a time anywhere but the views' own definition.
_COMPARES_EXPIRY = re.compile(r"expires_at\s*(<=|>=|<|>)\s*(\?|%s|:|\{|memvm|current_setting|\d)")


def test_only_the_schema_compares_expiry_with_a_time():
    offences = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for package in ("engine", "server", "hooks", "ui", "resources")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "schema_changes.py"
        for match in _COMPARES_EXPIRY.finditer(path.read_text())
    ]
    assert offences == []
