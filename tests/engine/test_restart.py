import pytest
from memvm.engine.models.pages import Level

from tests.conftest import NS, long_text, note, user

pytestmark = pytest.mark.anyio


async def test_pages_working_set_turn_and_levels_survive_a_restart(open_engine):
    engine = await open_engine()
    ingested = await engine.ingest(namespace=NS, session="s", messages=[user(long_text("harbour", 8))])
    kept = await engine.remember(namespace=NS, session="s", page=note(long_text("lighthouse", 8)), key="lh")
    await engine.begin_turn(namespace=NS, session="s")
    await engine.page_fault(namespace=NS, session="s", page_id="lh", target_level=Level.REDUCED)
    before_view = await engine.working_set(namespace=NS, session="s")
    before_state = await engine.session_state(namespace=NS, session="s")
    before_page = await engine.get_page(namespace=NS, page_id="lh")
    await engine.close()

    reopened = await open_engine()
    assert await reopened.working_set(namespace=NS, session="s") == before_view
    state = await reopened.session_state(namespace=NS, session="s")
    assert (
        (state.turn, state.faults_this_turn) == (before_state.turn, before_state.faults_this_turn) == (2, 1)
    )
    page = await reopened.get_page(namespace=NS, page_id="lh")
    assert page.levels == before_page.levels and page.tokens == before_page.tokens
    assert kept.tokens == page.tokens.as_dict()
    found = await reopened.search(namespace=NS, session="s", query="harbour")
    assert found.results[0].page_id == ingested.page_ids[0]
    again = await reopened.page_fault(namespace=NS, session="s", page_id="lh", target_level=Level.REDUCED)
    assert again.already_mapped and again.faults_left == 2
