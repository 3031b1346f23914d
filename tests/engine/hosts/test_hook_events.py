import pytest

from tests.conftest import NS, db_rows

pytestmark = pytest.mark.anyio


async def test_an_event_recorded_twice_is_one_row_and_keeps_its_first_answer(engine, db_url):
    assert await engine.handled_hook_event(namespace=NS, digest="d1") is None
    await engine.record_hook_event(
        namespace=NS, host="claude-code", session="s", digest="d1", event="PreToolUse", answer="no"
    )
    await engine.record_hook_event(
        namespace=NS, host="claude-code", session="s", digest="d1", event="PreToolUse", answer="yes"
    )

    seen = await engine.handled_hook_event(namespace=NS, digest="d1")
    assert (seen.event, seen.answer) == ("PreToolUse", "no")
    assert await engine.handled_hook_event(namespace=NS + "-other", digest="d1") is None
    assert db_rows(db_url, "SELECT count(*) FROM hook_events") == [(1,)]
