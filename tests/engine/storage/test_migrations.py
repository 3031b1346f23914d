"""Migrations 7 to 9 on blank and populated files: every row kept, and running again changes nothing."""

import sqlite3

import pytest
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.operations.doctor import diagnose
from memvm.engine.storage.migrations import MIGRATIONS, SCHEMA_VERSION, migrate

from tests.conftest import NS, note
from tests.engine.old_schema import add_page, add_session, file_at

# About SQLite itself: its file, its pragmas, its migrations and its FTS5 index.
pytestmark = [pytest.mark.anyio, pytest.mark.sqlite_only]


# The schema 6 file's tool calls, once numbered within their namespace: (namespace, call_id,
# fixed_by, fixes). The links between them follow the new numbers.
CALLS_PER_NAMESPACE = [
    ("a", 1, 2, None),
    ("a", 2, None, 1),
    ("a", 3, None, None),
    ("b", 1, None, None),
    ("b", 2, None, None),
]


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_xinfo({table})")}


async def test_a_blank_file_gets_page_texts_apart_and_call_ids_per_namespace(engine, db_path):
    with sqlite3.connect(db_path) as conn:
        assert {"content", "reduced"} <= _columns(conn, "page_texts")
        assert not {"content", "reduced"} & _columns(conn, "pages")
        assert {"rowid", "call_id"} <= _columns(conn, "tool_calls")
        assert "project" in _columns(conn, "pages")
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]
    assert versions == [m.version for m in MIGRATIONS["sqlite"]] and SCHEMA_VERSION == 24
    assert await migrate(engine.db) == []


def _schema_6_file(db_path) -> dict[str, int]:
    """A file as schema 6 left it: two namespaces' pages, a mapped page, and interleaved calls."""
    conn = file_at(db_path, 6)
    for namespace in ("a", "b"):
        add_session(conn, namespace, "s")
    add_page(conn, "a", "s", "msg_000001", "The walrus sang at noon. " * 50, name="Gina")
    mapped = add_page(conn, "a", "s", "msg_000002", "Kettle boiled over.")
    add_page(conn, "b", "s", "pricing", "Prices rose in May.")
    conn.execute(
        "INSERT INTO working_set VALUES ('a', 's', ?, 2, 9, NULL, 1, 1)",
        (mapped,),
    )
    chars = {
        row[0]: row[1] for row in conn.execute("SELECT namespace, chars FROM page_counts ORDER BY namespace")
    }
    # Global ids 1..5: a, b, a (fixes a's first), b, a.
    insert = """INSERT INTO tool_calls (call_id, namespace, session, turn, tool, args, call_hash, outcome,
                    error_signature, fixed_by, fixes, at)
                VALUES (?, ?, 's', 1, 'fetch', '{}', 'h', ?, ?, ?, ?, 1)"""
    conn.execute("PRAGMA defer_foreign_keys = ON")
    conn.execute("BEGIN")
    for call_id, namespace, outcome, signature, fixed_by, fixes in (
        (1, "a", "failure", "timeout", 3, None),
        (2, "b", "success", None, None, None),
        (3, "a", "success", None, None, 1),
        (4, "b", "success", None, None, None),
        (5, "a", "success", None, None, None),
    ):
        conn.execute(insert, (call_id, namespace, outcome, signature, fixed_by, fixes))
    conn.execute(
        "INSERT INTO tool_stats VALUES ('a', 'fetch', 3, 2, 0, 0, 1, 5), ('b', 'fetch', 2, 2, 0, 0, 1, 4)"
    )
    conn.execute("INSERT INTO error_patterns VALUES ('a', 'fetch', 'timeout', 1, NULL, 1, 1, '{}', 3, 1)")
    conn.execute("INSERT INTO success_values VALUES ('b', 'fetch', '', 'q', '1', 1, 1, 4)")
    conn.execute("COMMIT")
    conn.close()
    return chars


async def test_a_populated_schema_6_file_keeps_every_page_and_call(open_engine, db_path):
    chars = _schema_6_file(db_path)
    engine = await open_engine()
    walrus = await engine.namespace("a").get_page(page_id="msg_000001")
    assert walrus.levels[0] == "The walrus sang at noon. " * 50 and walrus.metadata == {"name": "Gina"}
    found = await engine.session("a", "s").search(query="Gina walrus")
    assert [hit.page_id for hit in found.results] == ["msg_000001"] and "walrus" in found.results[0].snippet
    assert [e.page_id for e in (await engine.session("a", "s").working_set()).entries] == ["msg_000002"]
    assert (await engine.session("b", "s").search(query="prices")).results[0].page_id == "pricing"
    with sqlite3.connect(db_path) as conn:
        after = dict(conn.execute("SELECT namespace, chars FROM page_counts ORDER BY namespace").fetchall())
        calls = conn.execute(
            "SELECT namespace, call_id, fixed_by, fixes FROM tool_calls ORDER BY namespace, call_id"
        ).fetchall()
        stats = conn.execute("SELECT namespace, last_call_id FROM tool_stats ORDER BY namespace").fetchall()
        pattern = conn.execute("SELECT last_call_id, fix_call_id FROM error_patterns").fetchone()
        value = conn.execute("SELECT last_call_id FROM success_values").fetchone()
        ad_hoc = conn.execute("SELECT DISTINCT ad_hoc FROM sessions").fetchall()
        log_chars = conn.execute("SELECT namespace, log_chars FROM page_counts ORDER BY namespace").fetchall()
    assert log_chars == [("a", 6), ("b", 4)]  # the calls' arguments ('{}' each) count for the quota
    assert after == chars  # the ranking's statistics are what they were
    assert calls == CALLS_PER_NAMESPACE
    assert stats == [("a", 3), ("b", 2)] and pattern == (1, 2) and value == (2,)
    assert ad_hoc == [(0,)]  # sessions from before keep an allowance of their own
    assert (await diagnose(engine.db)).healthy
    assert await migrate(engine.db) == []
    # A new call goes on from the namespace's own count.
    recorded = await engine.session("b", "s").record_tool_outcome(
        call=ToolOutcome(tool="fetch", args={}, outcome=Outcome.SUCCESS)
    )
    assert recorded.call_id == 3


async def test_a_rewritten_page_stays_exactly_indexed_and_counted(engine, db_path):
    await engine.session(NS, "s").remember(page=note("alpha beta"), key="k")
    await engine.session(NS, "s").remember(page=note("gamma delta epsilon"), key="k")
    assert not (await engine.session(NS, "s").search(query="alpha")).results
    assert [h.page_id for h in (await engine.session(NS, "s").search(query="gamma")).results] == ["k"]
    await engine.session(NS, "s").forget(page_id="k")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM page_texts").fetchone() == (0,)
        assert conn.execute("SELECT pages, chars FROM page_counts WHERE namespace = ?", (NS,)).fetchone() == (
            0,
            0,
        )
    assert (await diagnose(engine.db)).healthy
