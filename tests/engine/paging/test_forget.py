"""`forget`: the page, the rows derived from it, and (SQLite) every byte of its text in the file and WAL."""

import secrets
from pathlib import Path

import anyio
import pytest
from memvm.engine.models.procedures import Outcome, ToolOutcome

from tests.conftest import NS, db_rows, long_text, note, user
from tests.seeding import Fill, fill, notes

pytestmark = pytest.mark.anyio


def token() -> str:
    """A word that occurs nowhere else: found in the raw bytes only if the forgotten text is there."""
    return "zq" + secrets.token_hex(12)


def stored_bytes(db_path: Path) -> bytes:
    """The file and its WAL as they are on disk, read past SQLite."""
    wal = Path(f"{db_path}-wal")
    return db_path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def tool_result(secret: str) -> ToolOutcome:
    """A result long enough to become a page and short enough to be bound as $vN."""
    rows = [{"id": i, "note": f"row {i} of the customer export"} for i in range(40)]
    rows[7]["note"] = f"account code {secret}"
    return ToolOutcome(
        tool="export_customers", args={"region": "north"}, outcome=Outcome.SUCCESS, result=rows
    )


def orchard(pages: int = 30) -> Fill:
    """Other pages around the forgotten one, so the index has segments of its own to merge."""
    return notes(*(long_text(f"orchard {i}", 4) for i in range(pages)))


@pytest.mark.sqlite_only
async def test_forgotten_text_is_gone_from_the_file_and_its_wal(engine, db_path):
    secret = token()
    await fill(engine, orchard())
    stored = await engine.session(NS, "s").remember(page=note(f"the vault phrase is {secret}"))
    await fill(engine, orchard(5))
    await engine.session(NS, "s").page_fault(page_id=stored.page_id)
    assert secret.encode() in stored_bytes(db_path)
    result = await engine.session(NS, "s").forget(page_id=stored.page_id)
    assert result.deleted and result.purged
    assert secret.encode() not in stored_bytes(db_path)
    # The pages around it are still found: the index was merged, not dropped.
    assert (await engine.session(NS, "s").search(query="orchard 3")).results


@pytest.mark.sqlite_only
async def test_every_earlier_text_of_a_rewritten_key_is_gone_after_forget(engine, db_path):
    first, second = token(), token()
    await fill(engine, orchard(10))
    await engine.session(NS, "s").remember(page=note(f"wifi password {first}"), key="wifi")
    await engine.session(NS, "s").remember(page=note(f"wifi password {second}"), key="wifi")
    await engine.session(NS, "s").forget(page_id="wifi")
    on_disk = stored_bytes(db_path)
    assert first.encode() not in on_disk
    assert second.encode() not in on_disk


@pytest.mark.sqlite_only
async def test_a_forgotten_tool_result_leaves_no_bytes_in_its_bound_value(engine, db_path):
    secret = token()
    recorded = await engine.session(NS, "s").record_tool_outcome(call=tool_result(secret))
    assert recorded.page_id is not None and recorded.ref is not None
    assert secret.encode() in stored_bytes(db_path)
    await engine.session(NS, "s").forget(page_id=recorded.page_id)
    assert secret.encode() not in stored_bytes(db_path)


async def test_forgetting_a_tool_result_forgets_the_values_bound_from_it(engine, db_url):
    secret = token()
    await engine.session(NS, "main").begin_turn()
    # Recorded in a session the caller made up: the value is bound there and in the caller's own.
    recorded = await engine.session(NS, "side", host_session="main").record_tool_outcome(
        call=tool_result(secret)
    )
    holding = "SELECT session, seq FROM bindings WHERE value LIKE ?"
    assert len(db_rows(db_url, holding, (f"%{secret}%",))) == 2
    await engine.session(NS, "main").forget(page_id=recorded.page_id)

    assert db_rows(db_url, holding, (f"%{secret}%",)) == []
    assert db_rows(db_url, "SELECT DISTINCT value_type, value, number FROM bindings") == [
        ("forgotten", "null", None)
    ]
    assert db_rows(db_url, "SELECT count(*) FROM result_numbers") == [(0,)]
    assert db_rows(db_url, "SELECT result_page_id, ref FROM tool_calls") == [(None, recorded.ref)]
    # The reference resolves to nothing; its number is not given to the next value.
    check = await engine.session(NS, "side").check_ungrounded(args={"rows": recorded.ref})
    assert check.missing_refs == [recorded.ref]
    again = await engine.session(NS, "side").bind_value(tool="t", args={}, value=12)
    assert again.ref != recorded.ref
    assert (
        await engine.session(NS, "side").check_tool_call(tool="export_customers", args={"region": "north"})
    ).cached_result is None


async def test_a_part_of_a_forgotten_result_bound_under_a_name_is_forgotten_too(engine, db_url):
    secret = token()
    call = tool_result(secret)
    recorded = await engine.session(NS, "s").record_tool_outcome(call=call)
    part = {"note": f"account code {secret}"}
    named = await engine.session(NS, "s").bind_value(
        tool=call.tool, args=call.args, value=part, name="account_row"
    )
    assert named.ref != recorded.ref
    await engine.session(NS, "s").forget(page_id=recorded.page_id)
    assert db_rows(db_url, "SELECT count(*) FROM bindings WHERE value LIKE ?", (f"%{secret}%",)) == [(0,)]
    check = await engine.session(NS, "s").check_tool_call(tool="send", args={"text": "$account_row"})
    assert secret not in str(check.resolved_args)


async def test_forgetting_a_user_message_takes_back_the_numbers_only_it_held(engine, db_url):
    said = await engine.session(NS, "s").ingest(
        messages=[user("Book 4 seats for 918273."), user("Make it 4 seats.")]
    )
    await engine.session(NS, "s").forget(page_id=said.page_ids[0])
    numbers = db_rows(db_url, "SELECT number FROM user_numbers WHERE session = 's' ORDER BY number")
    assert numbers == [(4.0,)]


async def test_forget_purges_on_both_backends_and_leaves_other_rows(engine, db_url):
    secret = token()
    kept = await engine.session(NS, "s").remember(page=note("the orchard gate code is 1234"))
    gone = await engine.session(NS, "s").remember(page=note(f"temporary phrase {secret}"))
    result = await engine.session(NS, "s").forget(page_id=gone.page_id)
    assert result.purged
    assert db_rows(db_url, "SELECT count(*) FROM page_texts WHERE content LIKE ?", (f"%{secret}%",)) == [(0,)]
    assert db_rows(db_url, "SELECT page_id FROM pages") == [(kept.page_id,)]
    assert (await engine.session(NS, "s").search(query=secret)).results == []


@pytest.mark.sqlite_only
async def test_gc_takes_an_expired_pages_text_and_its_versions_out_of_the_file(engine, clock, db_path):
    first, second = token(), token()
    await fill(engine, orchard(10))
    page = note(f"door code {first}")
    await engine.session(NS, "s").remember(page=page, key="door", ttl_seconds=60)
    await engine.session(NS, "s").remember(page=note(f"door code {second}"), key="door", ttl_seconds=60)
    assert first.encode() in stored_bytes(db_path) and second.encode() in stored_bytes(db_path)
    clock.advance(61)
    assert await engine.collect_expired() == 1
    on_disk = stored_bytes(db_path)
    assert first.encode() not in on_disk and second.encode() not in on_disk


@pytest.mark.sqlite_only
async def test_gc_purges_an_expired_page_a_write_deleted_on_its_way(engine, clock, db_path):
    secret = token()
    await fill(engine, orchard(10))
    await engine.session(NS, "s").remember(page=note(f"gate code {secret}"), ttl_seconds=60)
    clock.advance(61)
    # The next write deletes the expired page on its way, without a purge: its text stays in the
    # index's segments and the WAL until one.
    await engine.session(NS, "s").remember(page=note("the pump starts at dawn"))
    assert db_rows(str(db_path), "SELECT count(*) FROM purge_owed") == [(1,)]
    assert await engine.collect_expired() == 0
    assert secret.encode() not in stored_bytes(db_path)
    assert db_rows(str(db_path), "SELECT count(*) FROM purge_owed") == [(0,)]


async def test_concurrent_forgets_run_one_purge_at_a_time_and_share_them(engine, db_url):
    pages = [await engine.session(NS, "s").remember(page=note(f"throwaway {token()}")) for _ in range(12)]
    purges, running, most_at_once = 0, 0, 0
    run_one = engine.db._purge_now

    async def counted() -> bool:
        nonlocal purges, running, most_at_once
        purges, running = purges + 1, running + 1
        most_at_once = max(most_at_once, running)
        try:
            return await run_one()
        finally:
            running -= 1

    engine.db._purge_now = counted
    results = []

    async def forget(page_id: str) -> None:
        results.append(await engine.session(NS, "s").forget(page_id=page_id))

    async with anyio.create_task_group() as group:
        for page in pages:
            group.start_soon(forget, page.page_id)
    # Each forget waited for a purge that started after its delete; one ran at a time, and the
    # forgets that came while one ran shared the next.
    assert len(results) == 12 and all(result.purged for result in results)
    assert most_at_once == 1 and purges < 12
    assert db_rows(db_url, "SELECT count(*) FROM purge_owed") == [(0,)]
