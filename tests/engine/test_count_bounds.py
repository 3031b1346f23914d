"""Counts a client can grow are bounded per namespace: the values one session keeps bound (the
newest make room) and the sessions a namespace holds (past the bound, a new one is refused)."""

import pytest
from memvm.engine import sessions
from memvm.engine.errors import InvalidArgument
from memvm.engine.guards import bindings

from tests.conftest import NS, db_rows, note

pytestmark = pytest.mark.anyio


async def test_a_session_keeps_its_newest_bound_values_and_the_oldest_become_unknown(
    engine, db_url, monkeypatch
):
    monkeypatch.setattr(bindings, "MAX_BINDINGS_PER_SESSION", 5)
    refs = [
        (await engine.session(NS, "s").bind_value(tool="t", args={"i": i}, value=1000 + i)).ref
        for i in range(8)
    ]
    assert refs == [f"$v{i}" for i in range(1, 9)]
    assert db_rows(db_url, "SELECT seq FROM bindings WHERE session = 's' ORDER BY seq") == [
        (seq,) for seq in range(4, 9)
    ]
    checked = await engine.session(NS, "s").check_ungrounded(args={"a": "$v1", "b": "$v8"})
    assert checked.missing_refs == ["$v1"]
    # Numbers never repeat: the next value is $v9, not a freed one.
    again = await engine.session(NS, "s").bind_value(tool="t", args={"i": 9}, value=2000)
    assert again.ref == "$v9"


async def test_past_its_session_bound_a_namespace_refuses_a_new_session_and_keeps_serving_the_others(
    engine, monkeypatch
):
    monkeypatch.setattr(sessions, "MAX_SESSIONS_PER_NAMESPACE", 3)
    for name in ("a", "b", "c"):
        await engine.session(NS, name).remember(page=note(f"note of {name}"))
    with pytest.raises(InvalidArgument, match="at most 3 sessions"):
        await engine.session(NS, "d").remember(page=note("one session too many"))
    # The sessions it has go on, and so does another namespace.
    assert (await engine.session(NS, "a").remember(page=note("more of a"))).created
    assert (await engine.session("other", "d").remember(page=note("elsewhere"))).created
