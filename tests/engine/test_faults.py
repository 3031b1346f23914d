import pytest
from memvm.engine.errors import FaultLimitReached, PageNotFound
from memvm.engine.models import Level

from tests.conftest import NS, long_text, note, user

pytestmark = pytest.mark.anyio


async def fault(engine, page_id, level=Level.ABSTRACT, session="s"):
    return await engine.page_fault(namespace=NS, session=session, page_id=page_id, target_level=level)


async def test_target_level_is_honoured(engine):
    stored = await engine.remember(namespace=NS, session="s", page=note(long_text("boiler", 20)))
    page = await engine.get_page(namespace=NS, page_id=stored.page_id)
    for level in (Level.REFERENCE, Level.ABSTRACT, Level.REDUCED, Level.FULL):
        await engine.begin_turn(namespace=NS, session="s")
        result = await fault(engine, stored.page_id, level)
        assert result.level == level
        assert result.content == page.levels[level]
        assert result.tokens == page.tokens.at(level)


async def test_refault_of_mapped_page_is_free(engine):
    stored = await engine.remember(namespace=NS, session="s", page=note(long_text("kettle")))
    first = await fault(engine, stored.page_id, Level.REDUCED)
    again = await fault(engine, stored.page_id, Level.REDUCED)
    coarser = await fault(engine, stored.page_id, Level.REFERENCE)
    assert not first.already_mapped and first.faults_left == 2
    assert again.already_mapped and again.faults_left == 2
    assert coarser.already_mapped and coarser.faults_left == 2
    assert again.working_set_tokens == first.working_set_tokens == coarser.working_set_tokens
    view = await engine.working_set(namespace=NS, session="s")
    assert [(e.page_id, e.level) for e in view.entries] == [(stored.page_id, 1)]


async def test_an_upgrade_to_a_finer_level_is_charged(engine):
    stored = await engine.remember(namespace=NS, session="s", page=note(long_text("toaster")))
    coarse = await fault(engine, stored.page_id, Level.ABSTRACT)
    fine = await fault(engine, stored.page_id, Level.FULL)
    assert not fine.already_mapped
    assert fine.faults_left == coarse.faults_left - 1
    assert fine.working_set_tokens > coarse.working_set_tokens
    view = await engine.working_set(namespace=NS, session="s")
    assert [(e.page_id, e.level) for e in view.entries] == [(stored.page_id, 0)]


async def test_unknown_page_error_names_search_pages(engine):
    with pytest.raises(PageNotFound, match="search_pages"):
        await fault(engine, "msg_999999")


async def test_fault_limit_is_enforced_and_says_when_it_resets(engine):
    ids = [
        (await engine.remember(namespace=NS, session="s", page=note(f"fact {i}"))).page_id for i in range(4)
    ]
    for page_id in ids[:3]:
        await fault(engine, page_id)
    with pytest.raises(FaultLimitReached, match="next user message") as refused:
        await fault(engine, ids[3])
    assert "limit of 3" in str(refused.value)
    # A page already mapped stays free even when the allowance is used up.
    assert (await fault(engine, ids[0])).already_mapped
    turn = await engine.begin_turn(namespace=NS, session="s")
    assert turn.faults_left == 3
    assert (await fault(engine, ids[3])).faults_left == 2


async def test_an_ingested_user_message_starts_a_new_turn(engine):
    first = await engine.ingest(namespace=NS, session="s", messages=[user("hello there")])
    second = await engine.ingest(namespace=NS, session="s", messages=[user("and again")])
    assert second.turn == first.turn + 1


async def test_an_idle_gap_starts_a_new_turn_for_hosts_that_never_mark_turns(engine, clock):
    ids = [
        (await engine.remember(namespace=NS, session="s", page=note(f"fact {i}"))).page_id for i in range(5)
    ]
    for page_id in ids[:3]:
        await fault(engine, page_id)
    with pytest.raises(FaultLimitReached):
        await fault(engine, ids[3])
    clock.advance(119)
    with pytest.raises(FaultLimitReached):
        await fault(engine, ids[3])
    clock.advance(121)
    result = await fault(engine, ids[3])
    assert result.faults_left == 2
    assert (await engine.session_state(namespace=NS, session="s")).turn == 1


async def test_a_page_that_cannot_fit_reports_mapped_false_and_why(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=900)
    huge = await engine.remember(namespace=NS, session="s", page=note(long_text("furnace", 30)))
    result = await fault(engine, huge.page_id, Level.FULL)
    assert result.mapped is False
    assert "coarser target_level" in result.reason
    assert result.content  # the content is still handed over, as data
    view = await engine.working_set(namespace=NS, session="s")
    assert view.entries == []
    smaller = await fault(engine, huge.page_id, Level.ABSTRACT)
    assert smaller.mapped is True
