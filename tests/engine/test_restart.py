import pytest
from memvm.engine.models.pages import Level

from tests.conftest import NS, long_text, note, user

pytestmark = pytest.mark.anyio


async def test_pages_working_set_turn_and_levels_survive_a_restart(open_engine):
    engine = await open_engine()
    ingested = await engine.session(NS, "s").ingest(messages=[user(long_text("harbour", 8))])
    kept = await engine.session(NS, "s").remember(page=note(long_text("lighthouse", 8)), key="lh")
    await engine.session(NS, "s").begin_turn()
    await engine.session(NS, "s").page_fault(page_id="lh", target_level=Level.REDUCED)
    before_view = await engine.session(NS, "s").working_set()
    before_state = await engine.session(NS, "s").session_state()
    before_page = await engine.namespace(NS).get_page(page_id="lh")
    await engine.close()

    reopened = await open_engine()
    assert await reopened.session(NS, "s").working_set() == before_view
    state = await reopened.session(NS, "s").session_state()
    assert (
        (state.turn, state.faults_this_turn) == (before_state.turn, before_state.faults_this_turn) == (2, 1)
    )
    page = await reopened.namespace(NS).get_page(page_id="lh")
    assert page.levels == before_page.levels and page.tokens == before_page.tokens
    assert kept.tokens == page.tokens.as_dict()
    found = await reopened.session(NS, "s").search(query="harbour")
    assert found.results[0].page_id == ingested.page_ids[0]
    again = await reopened.session(NS, "s").page_fault(page_id="lh", target_level=Level.REDUCED)
    assert again.already_mapped and again.faults_left == 2
