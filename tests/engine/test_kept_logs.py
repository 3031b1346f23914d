"""The logs a client grows by calling tools keep their newest rows per namespace (or per turn):
the mutation log, the tool call log and what it taught, the guards' record of calls, the hooks'
record of events. The oldest go, another namespace's stay, and nothing that points at a row that
went is left dangling. The bounds are made small here; the rule is the same at full size."""

from dataclasses import replace

import pytest
from memvm.engine import kept_logs
from memvm.engine.guard_config import GuardConfig
from memvm.engine.models.pages import Level
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.storage.log_limits import LOG_CHARS_OF_NAMESPACE

from tests.conftest import NS, db_rows, long_text, note

pytestmark = pytest.mark.anyio


def bound(monkeypatch, table: str, rows: int, check_every: int) -> None:
    log = replace(kept_logs.KEPT_LOGS[table], rows=rows, check_every=check_every)
    monkeypatch.setitem(kept_logs.KEPT_LOGS, table, log)


def kept_newest(written: list[int], kept: list[int], rows: int, slack: int) -> None:
    """`kept` is the newest of `written`, at least `rows` of them and at most `rows + slack`."""
    assert rows <= len(kept) <= rows + slack
    assert kept == written[-len(kept) :]


async def test_the_mutation_log_keeps_each_namespaces_newest_changes(open_engine, db_url, clock, monkeypatch):
    engine = await open_engine(budget_tokens=100_000)
    await engine.session("other", "s").remember(page=note("a page of another tenant"))
    before = db_rows(db_url, "SELECT seq FROM mutation_log WHERE namespace = 'other'")
    bound(monkeypatch, "mutation_log", rows=6, check_every=4)
    for i in range(12):
        clock.advance(1)
        page = await engine.session(NS, "s").remember(page=note(long_text(f"topic{i}", 4)))
        await engine.session(NS, "s").page_fault(page_id=page.page_id, target_level=Level.FULL)
        await engine.session(NS, "s").begin_turn()  # a fresh fault allowance
    kept = [
        seq
        for (seq,) in db_rows(db_url, "SELECT seq FROM mutation_log WHERE namespace = ? ORDER BY seq", (NS,))
    ]
    assert kept and max(kept) >= 12  # each remember and fault wrote its changes
    written = list(range(min(kept), max(kept) + 1))
    kept_newest(written, kept, rows=6, slack=4 + 1)
    assert db_rows(db_url, "SELECT seq FROM mutation_log WHERE namespace = 'other'") == before


async def test_the_tool_call_log_and_what_it_taught_keep_their_newest(
    open_engine, db_url, clock, monkeypatch
):
    engine = await open_engine()
    await engine.session("other", "s").record_tool_outcome(
        call=ToolOutcome(tool="fetch", args={"q": 1}, outcome=Outcome.SUCCESS)
    )
    bound(monkeypatch, "tool_calls", rows=5, check_every=3)
    bound(monkeypatch, "tool_stats", rows=2, check_every=3)
    bound(monkeypatch, "error_patterns", rows=2, check_every=3)
    bound(monkeypatch, "success_values", rows=3, check_every=3)
    for i in range(1, 13):
        clock.advance(1)
        # Each tool fails, then is fixed by the next call: the fix points back at the failure.
        outcome = Outcome.FAILURE if i % 2 else Outcome.SUCCESS
        await engine.session(NS, "s").record_tool_outcome(
            call=ToolOutcome(
                tool=f"tool{(i + 1) // 2}",
                args={"n": i},
                outcome=outcome,
                error_message=f"failure {i}" if outcome is Outcome.FAILURE else None,
            )
        )
    calls = db_rows(
        db_url, "SELECT call_id, fixes, fixed_by FROM tool_calls WHERE namespace = ? ORDER BY call_id", (NS,)
    )
    kept_newest(list(range(1, 13)), [call_id for call_id, _, _ in calls], rows=5, slack=3 - 1)
    oldest = calls[0][0]
    # A kept fix whose failure went no longer names it; every link left points at a kept call.
    for _, fixes, fixed_by in calls:
        assert fixes is None or fixes >= oldest
        assert fixed_by is None or fixed_by >= oldest
    assert any(fixes is not None for _, fixes, _ in calls)
    # What the calls taught keeps its most recently used (tool12 and tool11 were used last).
    assert db_rows(db_url, "SELECT tool FROM tool_stats WHERE namespace = ? ORDER BY tool", (NS,)) == [
        ("tool5",),
        ("tool6",),
    ]
    assert len(db_rows(db_url, "SELECT 1 FROM error_patterns WHERE namespace = ?", (NS,))) == 2
    assert len(db_rows(db_url, "SELECT 1 FROM success_values WHERE namespace = ?", (NS,))) <= 3
    # Another tenant's log is not touched, and the namespace's call ids go on.
    assert db_rows(db_url, "SELECT call_id FROM tool_calls WHERE namespace = 'other'") == [(1,)]
    again = await engine.session(NS, "s").record_tool_outcome(
        call=ToolOutcome(tool="fetch", args={}, outcome=Outcome.SUCCESS)
    )
    assert again.call_id == 13
    # The text the quota counts went down with the rows (storage/log_limits.py).
    counted = f"SELECT namespace FROM page_counts WHERE log_chars <> {LOG_CHARS_OF_NAMESPACE}"
    assert db_rows(db_url, counted) == []


async def test_a_turn_keeps_its_newest_calls_let_through(open_engine, db_url, monkeypatch):
    engine = await open_engine()
    bound(monkeypatch, "guard_calls", rows=4, check_every=2)
    open_guards = GuardConfig(discovery_budget=0, execution_budget=0, loop_window=0, runaway_repeats=0)
    for i in range(10):
        checked = await engine.session(NS, "s").check_tool_call(
            tool=f"tool{i}", args={"q": "x"}, guards_config=open_guards, will_run=True
        )
        assert checked.verdict.value == "allow"
    tools = [
        tool
        for (tool,) in db_rows(
            db_url, "SELECT tool FROM guard_calls WHERE namespace = ? ORDER BY rowid", (NS,)
        )
    ]
    kept_newest([f"tool{i}" for i in range(10)], tools, rows=4, slack=2 - 1)


async def test_the_hooks_record_of_events_keeps_its_newest(open_engine, db_url, clock, monkeypatch):
    engine = await open_engine()
    await engine.hook_events.record(
        namespace="other", host="claude-code", session="s", digest="ab" * 32, event="Stop"
    )
    bound(monkeypatch, "hook_events", rows=3, check_every=1)
    digests = [f"{i:064x}" for i in range(8)]
    for digest in digests:
        clock.advance(1)
        await engine.hook_events.record(
            namespace=NS, host="claude-code", session="s", digest=digest, event="Stop"
        )
    kept = [
        d for (d,) in db_rows(db_url, "SELECT digest FROM hook_events WHERE namespace = ? ORDER BY at", (NS,))
    ]
    assert kept == digests[-3:]
    assert await engine.hook_events.handled(namespace=NS, digest=digests[-1]) is not None
    assert await engine.hook_events.handled(namespace=NS, digest=digests[0]) is None
    assert db_rows(db_url, "SELECT count(*) FROM hook_events WHERE namespace = 'other'") == [(1,)]


@pytest.mark.sqlite_only
async def test_each_logs_oldest_rows_are_found_by_index_without_a_sort(engine, db_path):
    """The cut walks an index on (scope..., order): a log that lost its index would sort the whole
    scope on every check instead."""
    import sqlite3

    with sqlite3.connect(db_path) as conn:
        for log in kept_logs.KEPT_LOGS.values():
            within = " AND ".join(f"{column} = ?" for column in log.scope)
            cut = f"SELECT {log.order} FROM {log.table} WHERE {within} ORDER BY {log.order} DESC LIMIT 1 OFFSET ?"
            plan = " ".join(
                row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {cut}", (None,) * (len(log.scope) + 1))
            )
            assert "INDEX" in plan and "TEMP B-TREE" not in plan, (log.table, plan)
