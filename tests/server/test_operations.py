"""The operator's commands on real files: doctor, export / import (exact round trip) and backup.

They run through `memvm`'s own entry point (`main`), as a person would type them; the database is
filled through the engine so that every table that holds memory has rows.
"""

import json
import sqlite3
import time
from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine
from memvm.engine.clock import ManualClock
from memvm.engine.models import Level, ToolOutcome
from memvm.engine.operations.transfer import memory_tables
from memvm.engine.storage.open import shown
from memvm.engine.storage.sqlite_schema import SCHEMA_VERSION
from memvm.server.cli import main

from tests.conftest import assistant, db_rows, long_text, note, user

NAMESPACES = ("acme", "globex")


async def fill(db: Path) -> None:
    """Memory in two namespaces touching every table: pages, faults, bindings, guards, outcomes."""
    engine = await Engine.open(db)
    try:
        for ns in NAMESPACES:
            s = {"namespace": ns, "session": f"{ns}-trip"}
            await engine.ingest(
                **s,
                messages=[
                    user(f"Book {ns} a table for 4 at 19:30, budget 1,800 — naïve café ✓"),
                    assistant('Looking for a table.\nQuotes "inside" and a tab\tnow.'),
                ],
            )
            stored = await engine.remember(**s, page=note(long_text(f"{ns} boiler", 30), importance=0.3))
            await engine.remember(**s, page=note("The user prefers window seats."), key="seats")
            # A rewrite keeps the first as a superseded version; a page that expires in a month.
            await engine.remember(**s, page=note("The user prefers window seats, aisle if not."), key="seats")
            await engine.remember(
                **s, page=note("Gate code 4471 for the trip."), key="gate", ttl_seconds=30 * 86_400
            )
            await engine.page_fault(**s, page_id=stored.page_id, target_level=Level.REDUCED)
            await engine.pin_page(**s, page_id=stored.page_id, pinned=True)
            await engine.bind_value(
                **s, tool="fx_rate", args={"pair": "EURUSD"}, value=1.0862, name="eur_usd"
            )
            await engine.bind_value(**s, tool="menu", args={}, value={"starters": [4.5, 7.25]})
            await engine.check_tool_call(**s, tool="pay", args={"usd": 123.456})
            await engine.check_ungrounded(**s, args={"amount": 99})
            failed = ToolOutcome(
                tool="book_table",
                args={"party": 4, "time": "7:30pm"},
                outcome="failure",
                error_type="ValidationError",
                error_message="time must be HH:MM",
                duration_ms=12.5,
            )
            await engine.record_tool_outcome(**s, call=failed)
            fixed = ToolOutcome(
                tool="book_table",
                args={"party": 4, "time": "19:30"},
                outcome="success",
                result=1.0 / 3.0,
                goal="book dinner",
            )
            await engine.record_tool_outcome(**s, call=fixed)
            await engine.record_hook_event(
                **s, host="claude-code", digest=f"{ns}-event", event="PreToolUse", answer="denied"
            )
    finally:
        await engine.close()


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    db = tmp_path / "memvm.db"
    anyio.run(fill, db)
    with sqlite3.connect(db) as conn:
        empty = [
            t.name for t in memory_tables(conn) if not conn.execute(f'SELECT 1 FROM "{t.name}"').fetchone()
        ]
    assert empty == []  # the round trip below covers every table
    return db


async def answers_of(db: Path | str) -> tuple:
    """What the tools answer from `db`: search, a working set, procedures and a fault."""
    engine = await Engine.open(db)
    try:
        found = await engine.search(namespace="acme", session="acme-trip", query="window seats")
        view = await engine.working_set(namespace="acme", session="acme-trip")
        knowledge = await engine.procedural_knowledge(namespace="acme", tools=["book_table"])
        fault = await engine.page_fault(namespace="acme", session="acme-trip", page_id="seats")
        return (
            [(r.page_id, round(r.score, 9)) for r in found.results],
            view.model_dump(),
            knowledge.model_dump(),
            fault.content,
        )
    finally:
        await engine.close()


def run(*argv: str | Path) -> int:
    return main([str(arg) for arg in argv])


def test_export_then_import_then_export_is_byte_for_byte_the_same(filled, tmp_path, capsys):
    first, second, copy = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "copy.db"
    assert run("export", "--db", filled, "--out", first) == 0
    assert run("import", first, "--db", copy) == 0
    assert run("export", "--db", copy, "--out", second) == 0
    assert first.read_bytes() == second.read_bytes()
    rows = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    assert rows[-1] == {"end": True, "rows": len(rows) - 2}
    assert "naïve café ✓" in first.read_text(encoding="utf-8")  # text kept as text
    assert "imported" in capsys.readouterr().out


def test_an_imported_database_searches_and_serves_like_the_original(filled, tmp_path):
    export, copy = tmp_path / "all.jsonl", tmp_path / "copy.db"
    run("export", "--db", filled, "--out", export)
    run("import", export, "--db", copy)

    assert anyio.run(answers_of, copy) == anyio.run(answers_of, filled)
    assert run("doctor", "--db", copy) == 0


def test_export_of_one_namespace_holds_only_its_rows(filled, tmp_path):
    out = tmp_path / "acme.jsonl"
    assert run("export", "--db", filled, "--namespace", "acme", "--out", out) == 0
    rows = [json.loads(line)["row"] for line in out.read_text(encoding="utf-8").splitlines()[1:-1]]
    assert rows and {row["namespace"] for row in rows} == {"acme"}


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda lines: lines[:-1], "cut short"),
        (lambda lines: lines[:1] + lines[2:], "end line counts"),
        (
            lambda lines: [lines[0].replace(f'"schema":{SCHEMA_VERSION}', '"schema":4'), *lines[1:]],
            "schema 4",
        ),
        (lambda lines: ["{}", *lines[1:]], "not a memvm export"),
        (lambda lines: [*lines[:3], "not json", *lines[3:]], "line 4: not JSON"),
        (lambda lines: [*lines[:2], lines[2].replace('"namespace"', '"tenant"'), *lines[3:]], "line 3"),
    ],
    ids=["truncated", "row-missing", "other-schema", "no-header", "garbage-line", "unknown-column"],
)
def test_a_damaged_export_is_refused_in_one_line_and_imports_nothing(filled, tmp_path, capsys, damage, says):
    export, damaged, copy = tmp_path / "all.jsonl", tmp_path / "damaged.jsonl", tmp_path / "copy.db"
    run("export", "--db", filled, "--out", export)
    damaged.write_text("\n".join(damage(export.read_text(encoding="utf-8").splitlines())) + "\n")
    capsys.readouterr()
    assert run("import", damaged, "--db", copy) == 2
    error = capsys.readouterr().err
    assert error.startswith("memvm: ") and error.count("\n") == 1 and says in error
    assert "Traceback" not in error
    if says == "not a memvm export":
        assert not copy.exists()  # a file with no header is refused before a database is made
        return
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 0


def test_import_refuses_a_database_that_already_holds_memory(filled, tmp_path, capsys):
    export, again = tmp_path / "all.jsonl", tmp_path / "again.jsonl"
    run("export", "--db", filled, "--out", export)
    assert run("import", export, "--db", filled) == 2
    assert "already holds memory" in capsys.readouterr().err
    run("export", "--db", filled, "--out", again)
    assert again.read_bytes() == export.read_bytes()  # nothing added, nothing doubled


def test_doctor_reports_a_healthy_file(filled, capsys):
    assert run("doctor", "--db", filled) == 0
    report = capsys.readouterr().out
    assert f"schema {SCHEMA_VERSION} (this memvm: {SCHEMA_VERSION})" in report and report.rstrip().endswith(
        "healthy"
    )
    assert run("doctor", "--db", filled, "--json") == 0
    found = json.loads(capsys.readouterr().out)
    assert found["healthy"] and found["pages"] > 0 and found["namespaces"] == 2
    assert found["checks"] == {
        "integrity": "ok",
        "owner": "ok",
        "foreign_keys": "ok",
        "page_counts": "ok",
        "rows": "ok",
        "search_index": "ok",
    }


def test_gc_deletes_the_expired_pages_that_doctor_counts(db_url, capsys):
    async def write_an_hour_ago() -> None:
        engine = await Engine.open(db_url, clock=ManualClock(time.time() - 3600))
        try:
            for key in ("parking", "wifi-code"):
                await engine.remember(namespace="acme", session="s", page=note(key), key=key, ttl_seconds=60)
            await engine.remember(namespace="acme", session="s", page=note("lasting"), key="lasting")
            await engine.remember(
                namespace="acme", session="s", page=note("for a day"), key="day", ttl_seconds=86_400
            )
        finally:
            await engine.close()

    anyio.run(write_an_hour_ago)
    assert run("doctor", "--db", db_url, "--json") == 0
    assert json.loads(capsys.readouterr().out)["expired_waiting"] == 2
    assert run("doctor", "--db", db_url) == 0
    assert "4 pages (2 expired, waiting for memvm gc)" in capsys.readouterr().out
    assert run("gc", "--db", db_url) == 0
    assert capsys.readouterr().out == f"deleted 2 expired pages from {shown(db_url)}\n"
    assert sorted(db_rows(db_url, "SELECT page_id FROM pages")) == [("day",), ("lasting",)]
    assert run("gc", "--db", db_url) == 0
    assert capsys.readouterr().out.startswith("deleted 0 expired pages")


def test_gc_on_a_missing_file_says_so_in_one_line(tmp_path, capsys):
    assert run("gc", "--db", tmp_path / "none.db") == 2
    assert capsys.readouterr().err.strip() == f"memvm: there is no database at {tmp_path / 'none.db'}"
    assert not (tmp_path / "none.db").exists()


def break_search_index(conn: sqlite3.Connection) -> None:
    # The index loses a page the table still has: search would miss it.
    indexed = conn.execute("SELECT rowid, content, speaker, search_key FROM page_search LIMIT 1").fetchone()
    conn.execute(
        "INSERT INTO pages_fts (pages_fts, rowid, content, speaker, search_key) VALUES ('delete', ?, ?, ?, ?)",
        indexed,
    )


@pytest.mark.parametrize(
    ("damage", "check", "says"),
    [
        (break_search_index, "search_index", "search index"),
        (
            lambda conn: conn.execute(
                "UPDATE pages_fts_data SET block = zeroblob(length(block)) WHERE id > 10"
            ),
            "search_index",
            "integrity-check failed",
        ),
        (lambda conn: conn.execute("UPDATE page_counts SET pages = pages + 7"), "page_counts", "page counts"),
        (
            lambda conn: conn.execute("DELETE FROM schema_migrations WHERE version = ?", (SCHEMA_VERSION,)),
            None,
            "serve it once",
        ),
    ],
    ids=["unindexed-page", "index-blocks", "page-counts", "old-schema"],
)
def test_doctor_names_each_problem_and_exits_1(filled, capsys, damage, check, says):
    with sqlite3.connect(filled) as conn:
        damage(conn)
    assert run("doctor", "--db", filled, "--json") == 1
    found = json.loads(capsys.readouterr().out)
    assert not found["healthy"] and any(says in problem for problem in found["problems"])
    if check:
        assert found["checks"][check] != "ok"


def test_doctor_on_garbage_or_nothing_says_so_without_a_traceback(tmp_path, capsys):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 200)
    assert run("doctor", "--db", garbage) == 1
    assert "not a usable SQLite database" in capsys.readouterr().out
    assert run("doctor", "--db", tmp_path / "missing.db") == 2
    assert capsys.readouterr().err.startswith("memvm: there is no database at")


def test_backup_is_a_checked_copy_and_never_overwrites(filled, tmp_path, capsys):
    target = tmp_path / "backup.db"
    assert run("backup", target, "--db", filled) == 0
    assert "backed up" in capsys.readouterr().out
    assert run("doctor", "--db", target) == 0
    with sqlite3.connect(filled) as original, sqlite3.connect(target) as copy:
        query = "SELECT page_id, content FROM pages JOIN page_texts USING (rowid) ORDER BY rowid"
        assert copy.execute(query).fetchall() == original.execute(query).fetchall()
    assert not Path(str(target) + "-wal").exists() or Path(str(target) + "-wal").stat().st_size == 0
    assert run("backup", target, "--db", filled) == 2
    assert "already exists" in capsys.readouterr().err


# Rows that fit their table's SQL but break what the tools keep; each used to be imported, to
# break search, faults or resources (or to show acme's page in globex's working set), and to be
# called healthy by doctor.
BAD_ROWS = {
    "foreign page in a working set": (
        "UPDATE working_set SET page_rowid = (SELECT min(rowid) FROM pages WHERE namespace = 'acme') "
        "WHERE namespace = 'globex' AND page_rowid = (SELECT max(page_rowid) FROM working_set WHERE namespace = 'globex')",
        "table working_set, row (namespace='globex', session='globex-trip', page_rowid=",
        "it maps a page of another namespace",
    ),
    "unknown page type": (
        "UPDATE pages SET type = 'memo' WHERE page_id = 'seats' AND namespace = 'acme'",
        "table pages, row (rowid=",
        "its type is not a page type",
    ),
    "value that is not JSON": (
        "UPDATE bindings SET value = '{not json' WHERE seq = 1 AND namespace = 'acme'",
        "table bindings, row (rowid=",
        "its value is not JSON",
    ),
    "counter about to overflow": (
        "UPDATE sessions SET turn = 9223372036854775807 WHERE namespace = 'acme'",
        "table sessions, row (namespace='acme', session='acme-trip')",
        "turn is not a whole number within",
    ),
    "infinite time": (
        "UPDATE tool_calls SET at = 9e999 WHERE call_id = (SELECT min(call_id) FROM tool_calls)",
        "table tool_calls, row (rowid=",
        "at is not a finite number",
    ),
    "metadata that is not an object": (
        "UPDATE pages SET metadata = '[1, 2]' WHERE page_id = 'seats' AND namespace = 'globex'",
        "table pages, row (rowid=",
        "its metadata is not a JSON object",
    ),
    "texts of another namespace's page": (
        "UPDATE page_texts SET namespace = 'globex' "
        "WHERE rowid = (SELECT rowid FROM pages WHERE page_id = 'seats' AND namespace = 'acme')",
        "table page_texts, row (rowid=",
        "its page is of another namespace",
    ),
    # SQLite takes both as JSON; Python's reader, which every tool uses, fails on them.
    "JSON nested 900 deep": (
        "UPDATE bindings SET value = replace(hex(zeroblob(900)), '00', '[') || replace(hex(zeroblob(900)), '00', ']'), "
        "value_type = 'list' WHERE seq = 1 AND namespace = 'acme'",
        "table bindings, row (rowid=",
        "its value is not JSON memvm reads",
    ),
    "integer of 4401 digits": (
        "UPDATE success_values SET value = '1' || replace(hex(zeroblob(4400)), '00', '0') WHERE namespace = 'acme'",
        "table success_values, row (namespace='acme', tool='book_table'",
        "its value is not JSON memvm reads",
    ),
    "typical fix that is not an object": (
        "UPDATE error_patterns SET typical_fix = '[1, 2]' WHERE namespace = 'acme'",
        "table error_patterns, row (namespace='acme', tool='book_table'",
        "its typical fix is not a JSON object",
    ),
    "negative counter": (
        "UPDATE sessions SET faults_this_turn = -5 WHERE namespace = 'acme'",
        "table sessions, row (namespace='acme', session='acme-trip')",
        "its faults_this_turn is negative",
    ),
    "token count far below the text": (
        "UPDATE pages SET tokens_full = 1 WHERE page_id = "
        "(SELECT page_id FROM pages WHERE namespace = 'acme' AND type = 'note' ORDER BY tokens_full DESC LIMIT 1)",
        "table pages, row (rowid=",
        "its token counts are below its texts' length / 128",
    ),
    "line tokens far below the line": (
        "UPDATE working_set SET line_tokens = 1 WHERE namespace = 'acme' AND page_rowid = "
        "(SELECT rowid FROM pages WHERE namespace = 'acme' AND type = 'note' ORDER BY tokens_full DESC LIMIT 1)",
        "table working_set, row (namespace='acme', session='acme-trip', page_rowid=",
        "its line tokens are below its line's length / 128",
    ),
    "provenance no tool writes": (
        "UPDATE pages SET provenance = 'system administrator' WHERE page_id = 'seats' AND namespace = 'acme'",
        "table pages, row (rowid=",
        "its provenance is not model, a role or tool:NAME",
    ),
    "page id no tool accepts": (
        "UPDATE pages SET page_id = 'window seats' WHERE page_id = 'seats' AND namespace = 'acme'",
        "table pages, row (rowid=",
        "its page_id is not a name of the shape",
    ),
    "empty namespace": (
        "UPDATE id_counters SET namespace = '' WHERE namespace = 'acme'",
        "table id_counters, row (namespace='', prefix=",
        "its namespace is not a name of the shape",
    ),
    "value type that is not the value's": (
        "UPDATE bindings SET value_type = 'string' WHERE value_type = 'number' AND namespace = 'acme'",
        "table bindings, row (rowid=",
        "its value type is not its value's JSON type",
    ),
}


def test_import_refuses_and_doctor_reports_every_row_that_breaks_a_rule(
    filled, tmp_path, capsys, report_figure
):
    refused = found = 0
    for n, (damage, (sql, row, rule)) in enumerate(BAD_ROWS.items()):
        db = tmp_path / f"bad{n}.db"
        db.write_bytes(filled.read_bytes())
        with sqlite3.connect(db) as conn:
            conn.execute(sql)
            assert conn.total_changes >= 1, damage
        capsys.readouterr()
        assert run("doctor", "--db", db) == 1, damage
        report = capsys.readouterr().out
        assert row in report and rule in report, (damage, report)
        found += 1

        export, copy = tmp_path / f"bad{n}.jsonl", tmp_path / f"copy{n}.db"
        assert run("export", "--db", db, "--out", export) == 0
        capsys.readouterr()
        assert run("import", export, "--db", copy) == 2, damage
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("memvm: table ") and row in line and rule in line, (damage, line)
        assert line.endswith("nothing was imported")
        with sqlite3.connect(copy) as conn:
            assert [
                t.name for t in memory_tables(conn) if conn.execute(f'SELECT 1 FROM "{t.name}"').fetchone()
            ] == []
        refused += 1
    report_figure(f"import_validation: bad_rows={len(BAD_ROWS)} refused={refused} doctor_found={found}")
