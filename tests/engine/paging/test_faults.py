import re
import threading

import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.errors import FaultLimitReached, PageNotFound
from memvm.engine.models.pages import Level
from memvm.engine.models.working_set import FaultResult
from memvm.engine.paging.context_lines import line_cost, page_line
from memvm.engine.paging.tokens import TokenCounter
from memvm.engine.storage.migrations import migrate
from memvm.engine.storage.sqlite_db import Database

from tests.conftest import NS, long_text, note, user

pytestmark = pytest.mark.anyio


async def fault(engine, page_id, level=Level.ABSTRACT, session="s"):
    return await engine.session(NS, session).page_fault(page_id=page_id, target_level=level)


async def test_target_level_is_honoured(engine):
    stored = await engine.session(NS, "s").remember(page=note(long_text("boiler", 20)))
    page = await engine.namespace(NS).get_page(page_id=stored.page_id)
    for level in (Level.REFERENCE, Level.ABSTRACT, Level.REDUCED, Level.FULL):
        await engine.session(NS, "s").begin_turn()
        result = await fault(engine, stored.page_id, level)
        assert result.level == level
        assert result.content == page.levels[level]
        assert result.tokens == page.tokens.at(level)


async def test_refault_of_mapped_page_is_free(engine):
    stored = await engine.session(NS, "s").remember(page=note(long_text("kettle")))
    first = await fault(engine, stored.page_id, Level.REDUCED)
    again = await fault(engine, stored.page_id, Level.REDUCED)
    coarser = await fault(engine, stored.page_id, Level.REFERENCE)
    assert not first.already_mapped and first.faults_left == 2
    assert again.already_mapped and again.faults_left == 2
    assert coarser.already_mapped and coarser.faults_left == 2
    assert again.working_set_tokens == first.working_set_tokens == coarser.working_set_tokens
    view = await engine.session(NS, "s").working_set()
    assert [(e.page_id, e.level) for e in view.entries] == [(stored.page_id, 1)]


async def test_an_upgrade_to_a_finer_level_is_charged(engine):
    stored = await engine.session(NS, "s").remember(page=note(long_text("toaster")))
    coarse = await fault(engine, stored.page_id, Level.ABSTRACT)
    fine = await fault(engine, stored.page_id, Level.FULL)
    assert not fine.already_mapped
    assert fine.faults_left == coarse.faults_left - 1
    assert fine.working_set_tokens > coarse.working_set_tokens
    view = await engine.session(NS, "s").working_set()
    assert [(e.page_id, e.level) for e in view.entries] == [(stored.page_id, 0)]


async def test_unknown_page_error_names_search_pages(engine):
    with pytest.raises(PageNotFound, match="search_pages"):
        await fault(engine, "msg_999999")


async def test_fault_limit_is_enforced_and_says_when_it_resets(engine):
    ids = [(await engine.session(NS, "s").remember(page=note(f"fact {i}"))).page_id for i in range(4)]
    for page_id in ids[:3]:
        await fault(engine, page_id)
    with pytest.raises(FaultLimitReached, match="next user message") as refused:
        await fault(engine, ids[3])
    assert "limit of 3" in str(refused.value)
    # A page already mapped stays free even when the allowance is used up.
    assert (await fault(engine, ids[0])).already_mapped
    turn = await engine.session(NS, "s").begin_turn()
    assert turn.faults_left == 3
    assert (await fault(engine, ids[3])).faults_left == 2


async def test_a_host_that_never_starts_turns_is_told_only_the_idle_reset_and_it_holds(open_engine, clock):
    engine = await open_engine(turns_from_host=False)
    ids = [(await engine.session(NS, "s").remember(page=note(f"fact {i}"))).page_id for i in range(4)]
    for page_id in ids[:2]:
        await fault(engine, page_id)
    await fault(engine, ids[2], Level.REFERENCE)
    with pytest.raises(FaultLimitReached) as refused:
        await fault(engine, ids[3])
    kept = await fault(engine, ids[2], Level.FULL)  # no upgrade past the limit: it stays as it was
    message = str(refused.value)
    assert message == (
        "The limit of 3 page faults is used up; answer with what you have. "
        "It resets after 120 s without memory calls."
    )
    assert "user message" not in kept.reason and "after 120 s without memory calls" in kept.reason
    clock.advance(121)
    assert (await fault(engine, ids[3])).faults_left == 2


async def test_an_ingested_user_message_starts_a_new_turn(engine):
    first = await engine.session(NS, "s").ingest(messages=[user("hello there")])
    second = await engine.session(NS, "s").ingest(messages=[user("and again")])
    assert second.turn == first.turn + 1


async def test_an_idle_gap_starts_a_new_turn_for_hosts_that_never_mark_turns(engine, clock):
    ids = [(await engine.session(NS, "s").remember(page=note(f"fact {i}"))).page_id for i in range(5)]
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
    assert (await engine.session(NS, "s").session_state()).turn == 1


async def test_a_level_that_does_not_fit_is_never_handed_over_the_finest_that_fits_is(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=900)
    huge = await engine.session(NS, "s").remember(page=note(long_text("furnace", 30)))
    result = await fault(engine, huge.page_id, Level.FULL)
    page = await engine.namespace(NS).get_page(page_id=huge.page_id)
    assert result.requested_level == 0 and result.level > 0
    assert result.mapped is True and result.content == page.content(Level(result.level))
    assert result.tokens <= result.page_budget_tokens == 100
    assert f"mapped at level {result.level} instead" in result.reason
    # It is the finest that fits: the next finer level would not have.
    finer = engine.counter.count(page_line(page, Level(result.level - 1)))
    assert line_cost(finer) > result.page_budget_tokens
    view = await engine.session(NS, "s").working_set()
    assert [entry.level for entry in view.entries] == [result.level]
    assert result.faults_left == 2


async def test_a_page_that_fits_at_no_level_hands_over_nothing_and_costs_no_fault(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=940)
    await engine.session(NS, "s").remember(page=note(long_text("kiln", 30), pinned=True))
    other = await engine.session(NS, "s").remember(page=note(long_text("furnace", 30)))
    view = await engine.session(NS, "s").working_set()
    assert view.page_tokens > 45  # the pinned abstract holds most of the 60-token page budget
    result = await fault(engine, other.page_id, Level.FULL)
    assert result.mapped is False and result.level is None
    assert result.content == "" and result.tokens == 0
    assert result.faults_left == 3
    assert "1 pinned page holds" in result.reason and "until unpinned" in result.reason
    assert "next turn" not in result.reason  # nothing loaded this turn holds room
    assert "coarser" not in result.reason and not re.search(r"-\d", result.reason)
    assert (await engine.session(NS, "s").working_set()).entries == view.entries


async def test_no_room_names_only_what_holds_the_room(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=940, max_faults_per_turn=10)
    filler = await engine.session(NS, "s").remember(page=note(long_text("kiln", 30)))
    other = await engine.session(NS, "s").remember(page=note(long_text("furnace", 30)))
    assert (await fault(engine, filler.page_id, Level.ABSTRACT)).mapped
    result = await fault(engine, other.page_id, Level.FULL)
    assert result.mapped is False
    assert "loaded this turn" in result.reason and "pinned" not in result.reason
    assert "fault it again at the next turn" in result.reason


async def test_a_fault_into_a_session_that_did_not_exist_says_so(engine):
    stored = await engine.session(NS, "desk").remember(page=note("the gate code is 4411"))
    result = await engine.session(NS, "current", host_session="desk").page_fault(page_id=stored.page_id)
    assert result.working_set_session == "current" and result.session == "desk"
    assert "no session 'current'" in result.notice and "'desk'" in result.notice
    again = await engine.session(NS, "desk", host_session="desk").page_fault(page_id=stored.page_id)
    assert again.notice is None


async def test_asking_for_a_finer_level_that_does_not_fit_keeps_the_page_where_it_is_for_free(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=900)
    huge = await engine.session(NS, "s").remember(page=note(long_text("furnace", 30)))
    first = await fault(engine, huge.page_id, Level.FULL)
    again = await fault(engine, huge.page_id, Level.FULL)
    assert again.level == first.level and again.already_mapped is True
    assert again.faults_left == first.faults_left == 2
    assert "stays at level" in again.reason


class WatchedCounter(TokenCounter):
    """Counts as usual, and notes every long text counted on the event loop's thread or under the
    write lock."""

    def __init__(self, db_lock) -> None:
        super().__init__()
        self.db_lock = db_lock
        self.stalls: list[tuple[int, str]] = []

    def count(self, text: str) -> int:
        if len(text) > 20_000:
            if threading.current_thread() is threading.main_thread():
                self.stalls.append((len(text), "on the event loop"))
            if self.db_lock is not None and self.db_lock.locked():
                self.stalls.append((len(text), "under the write lock"))
        return super().count(text)


async def test_a_long_page_is_counted_off_the_event_loop_and_outside_the_write_lock(db_path, clock):
    config = EngineConfig(max_page_tokens=500_000)
    db = await Database.open(db_path, config, clock)
    try:
        await migrate(db)
        counter = WatchedCounter(db._lock)
        engine = Engine(db, config, counter, clock)
        words = " ".join(f"line {i} of the deploy log: shard {i % 97} rebalanced" for i in range(30_000))
        ingested = await engine.session(NS, "s").ingest(messages=[user(words[:1_300_000])])
        for level in (Level.FULL, Level.REDUCED, Level.FULL):
            await engine.session(NS, "s").begin_turn()
            await fault(engine, ingested.page_ids[0], level)
    finally:
        await db.close()
    assert counter.stalls == []


async def test_a_coarser_level_names_the_pinned_pages_that_hold_the_room(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=800)
    for topic in ("kiln", "lathe"):
        await engine.session(NS, "s").remember(page=note(long_text(topic, 30), pinned=True))
    other = await engine.session(NS, "s").remember(page=note(long_text("furnace", 6)))
    result = await fault(engine, other.page_id, Level.FULL)
    need = int(re.search(r"needs ([\d,]+) tokens", result.reason).group(1).replace(",", ""))
    assert need <= result.page_budget_tokens  # the page alone would fit: the pins are why it does not
    assert result.level > 0 and "2 pinned pages hold" in result.reason


async def test_remembering_a_pinned_page_says_whether_it_reached_the_context(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=940)
    first = await engine.session(NS, "s").remember(page=note(long_text("kiln", 30), pinned=True))
    second = await engine.session(NS, "s").remember(page=note(long_text("lathe", 30), pinned=True))
    plain = await engine.session(NS, "s").remember(page=note("not pinned"))
    assert first.mapped is True and first.reason is None
    assert second.mapped is False and "pinned page holds" in second.reason
    assert plain.mapped is None


async def test_past_the_fault_limit_a_page_already_in_context_is_handed_over_as_it_is(engine):
    ids = [(await engine.session(NS, "s").remember(page=note(long_text(t)))).page_id for t in "abcd"]
    first = await fault(engine, ids[0], Level.REFERENCE)
    for page_id in ids[1:3]:
        await fault(engine, page_id)
    again = await fault(engine, ids[0], Level.FULL)
    assert again.level == first.level == 3 and again.already_mapped is True and again.faults_left == 0
    assert "stays at level 3" in again.reason and "limit of 3 page faults" in again.reason
    with pytest.raises(FaultLimitReached):
        await fault(engine, ids[3])


async def test_an_old_conversation_named_after_an_idle_gap_is_charged_to_the_callers_own_session(
    engine, clock
):
    limit = engine.config.max_faults_per_turn
    pages = [await engine.session(NS, "desk").remember(page=note(f"pump {i} at dawn")) for i in range(8)]
    await engine.session(NS, "old").ingest(messages=[user("Where are the pumps?")])
    clock.advance(engine.config.turn_idle_seconds + 1)  # the old conversation is over
    await engine.session(NS, "live").ingest(messages=[user("And the valves?")])

    async def fault(session: str, page: int) -> FaultResult:
        return await engine.session(NS, session, host_session="desk").page_fault(page_id=pages[page].page_id)

    # The conversation the host is driving keeps its own allowance.
    assert [(await fault("live", i)).mapped for i in range(limit)] == [True] * limit
    for i in range(limit):
        await fault("desk", i)
    # The old one is ad hoc now: the caller's own allowance is spent, so it has none either.
    with pytest.raises(FaultLimitReached):
        await fault("old", limit)
    # Once the host starts a turn in it again, it is the host's conversation again.
    await engine.session(NS, "old").begin_turn()
    assert (await fault("old", limit)).mapped
