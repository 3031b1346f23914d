import sqlite3

import pytest
from memvm.engine.models import Level, PageType

from tests.conftest import NS, assistant, long_text, note, user

pytestmark = pytest.mark.anyio

SMALL = {"budget_tokens": 1_000, "reserved_tokens": 500}


async def fault(engine, page_id, level, session="s"):
    return await engine.page_fault(namespace=NS, session=session, page_id=page_id, target_level=level)


async def test_mapping_demotes_others_before_unmapping_them(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=820)
    a = await engine.remember(namespace=NS, session="s", page=note(long_text("pump", 6)))
    b = await engine.remember(namespace=NS, session="s", page=note(long_text("valve", 6)))
    await fault(engine, a.page_id, Level.FULL)
    await engine.begin_turn(namespace=NS, session="s")
    result = await fault(engine, b.page_id, Level.FULL)
    assert result.mapped
    assert (result.evicted[0].page_id, result.evicted[0].level_before) == (a.page_id, 0)
    assert result.evicted[0].level_after is not None  # demoted, still mapped
    view = await engine.working_set(namespace=NS, session="s")
    assert {e.page_id for e in view.entries} == {a.page_id, b.page_id}
    assert view.page_tokens <= engine.page_budget


async def test_the_working_set_never_exceeds_its_page_budget(open_engine):
    engine = await open_engine(**SMALL)
    for i in range(30):
        await engine.ingest(namespace=NS, session="s", messages=[user(long_text(f"topic{i}", 3))])
        view = await engine.working_set(namespace=NS, session="s")
        assert view.page_tokens <= engine.page_budget
    assert len(view.entries) < 30


async def test_pinned_pages_are_never_demoted_or_unmapped(open_engine):
    engine = await open_engine(**SMALL)
    pinned = await engine.remember(namespace=NS, session="s", page=note(long_text("anchor", 3)), key="anchor")
    await engine.pin_page(namespace=NS, session="s", page_id=pinned.page_id, pinned=True)
    await fault(engine, pinned.page_id, Level.FULL)
    for i in range(20):
        await engine.ingest(namespace=NS, session="s", messages=[user(long_text(f"filler{i}", 3))])
    view = await engine.working_set(namespace=NS, session="s")
    assert (pinned.page_id, 0) in {(e.page_id, e.level) for e in view.entries}


async def test_a_page_faulted_this_turn_is_not_evicted_in_the_same_turn(open_engine):
    engine = await open_engine(**SMALL)
    ids = [
        (await engine.remember(namespace=NS, session="s", page=note(long_text(f"t{i}", 4)))).page_id
        for i in range(3)
    ]
    first = await fault(engine, ids[0], Level.FULL)
    assert first.mapped
    for page_id in ids[1:]:
        result = await fault(engine, page_id, Level.FULL)
        assert ids[0] not in {e.page_id for e in result.evicted}
    view = await engine.working_set(namespace=NS, session="s")
    assert (ids[0], 0) in {(e.page_id, e.level) for e in view.entries}


async def test_claims_outlast_transcript_lines_of_the_same_age(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=880)
    claim = await engine.remember(
        namespace=NS, session="s", page=note(long_text("claim", 2), type=PageType.CLAIM, importance=0.5)
    )
    await fault(engine, claim.page_id, Level.FULL)
    chat = await engine.ingest(namespace=NS, session="s", messages=[assistant(long_text("chat", 2))])
    await engine.begin_turn(namespace=NS, session="s")
    newcomer = await engine.remember(namespace=NS, session="s", page=note(long_text("new", 3)))
    result = await fault(engine, newcomer.page_id, Level.FULL)
    touched = [e.page_id for e in result.evicted]
    assert touched and touched[0] == chat.page_ids[0]


async def test_every_change_is_in_an_append_only_mutation_log(open_engine, db_path):
    engine = await open_engine(**SMALL)
    a = await engine.remember(namespace=NS, session="s", page=note(long_text("log", 6)))
    await fault(engine, a.page_id, Level.ABSTRACT)
    await fault(engine, a.page_id, Level.FULL)
    await engine.pin_page(namespace=NS, session="s", page_id=a.page_id, pinned=True)
    await engine.forget(namespace=NS, session="s", page_id=a.page_id)
    with sqlite3.connect(db_path) as conn:
        kinds = [
            row
            for row in conn.execute(
                "SELECT kind, level_before, level_after, actor FROM mutation_log ORDER BY seq"
            )
        ]
        assert kinds == [
            ("map", None, 2, "model"),
            ("promote", 2, 0, "model"),
            ("pin", 0, 0, "host"),
            ("forget", 0, None, "engine"),
        ]
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE mutation_log SET kind = 'x'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM mutation_log")
