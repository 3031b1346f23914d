import sqlite3

import pytest

from tests.conftest import NS

pytestmark = pytest.mark.anyio


async def test_an_event_recorded_twice_is_one_row_and_keeps_its_first_answer(engine, db_path):
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
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM hook_events").fetchone()[0] == 1
