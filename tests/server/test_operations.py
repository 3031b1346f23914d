"""The operator's commands on real files: doctor, export / import (exact round trip) and backup.

They run in this process through `memvm`'s own entry point, as a person would type them; the
database is filled through the engine so that every table that holds memory has rows.
"""

import asyncio
import contextlib
import json
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import anyio
import pytest
from memvm.engine.clock import ManualClock
from memvm.engine.config import EngineConfig
from memvm.engine.storage.migrations import SCHEMA_VERSION
from memvm.engine.storage.open import opened_database, shown

from tests.commands import Done, run
from tests.conftest import db_rows
from tests.seeding import every_table, notes, opened, seed
from tests.stored import tables_holding_rows, tables_without_rows

NAMESPACES = ("acme", "globex")


@pytest.fixture(scope="module")
def filled_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = seed(tmp_path_factory.mktemp("filled") / "memvm.db", every_table(NAMESPACES))
    assert tables_without_rows(db) == []  # the round trip below covers every table
    assert not Path(f"{db}-wal").exists()  # closed cleanly: the file is the whole database
    return db


@pytest.fixture
def filled(filled_once: Path, tmp_path: Path) -> Path:
    """A copy of the filled database of its own for each test."""
    db = tmp_path / "memvm.db"
    shutil.copyfile(filled_once, db)
    return db


async def answers_of(db: Path | str) -> tuple:
    """What the tools answer from `db`: search, a working set, procedures and a fault."""
    async with opened(db) as engine:
        found = await engine.session("acme", "acme-trip").search(query="window seats")
        view = await engine.session("acme", "acme-trip").working_set()
        knowledge = await engine.namespace("acme").procedural_knowledge(tools=["book_table"])
        fault = await engine.session("acme", "acme-trip").page_fault(page_id="seats")
        return (
            [(r.page_id, round(r.score, 9)) for r in found.results],
            view.model_dump(),
            knowledge.model_dump(),
            fault.content,
        )


def test_export_then_import_then_export_is_byte_for_byte_the_same(filled, tmp_path):
    first, second, copy = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "copy.db"
    assert run("export", "--db", filled, "--out", first).status == 0
    imported = run("import", first, "--db", copy)
    assert run("export", "--db", copy, "--out", second).status == 0
    assert first.read_bytes() == second.read_bytes()
    rows = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    assert rows[-1] == {"end": True, "rows": len(rows) - 2}
    assert "naïve café ✓" in first.read_text(encoding="utf-8")  # text kept as text
    assert imported.status == 0 and imported.stdout == f"imported {len(rows) - 2} rows into {copy}\n"


def test_an_imported_database_searches_and_serves_like_the_original(filled, tmp_path):
    export, copy = tmp_path / "all.jsonl", tmp_path / "copy.db"
    run("export", "--db", filled, "--out", export)
    run("import", export, "--db", copy)

    assert anyio.run(answers_of, copy) == anyio.run(answers_of, filled)
    assert run("doctor", "--db", copy).status == 0


def test_export_of_one_namespace_holds_only_its_rows(filled, tmp_path):
    out = tmp_path / "acme.jsonl"
    assert run("export", "--db", filled, "--namespace", "acme", "--out", out).status == 0
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
def test_a_damaged_export_is_refused_in_one_line_and_imports_nothing(filled, tmp_path, damage, says):
    export, damaged, copy = tmp_path / "all.jsonl", tmp_path / "damaged.jsonl", tmp_path / "copy.db"
    run("export", "--db", filled, "--out", export)
    damaged.write_text("\n".join(damage(export.read_text(encoding="utf-8").splitlines())) + "\n")
    assert says in run("import", damaged, "--db", copy).refusal()
    if says == "not a memvm export":
        assert not copy.exists()  # a file with no header is refused before a database is made
        return
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 0


def import_with_a_row_that_does_not_fit(filled: Path, db: Path | str, tmp_path: Path) -> tuple[str, int]:
    """Import into `db` the export of `filled` with one page row's namespace null (its table refuses
    it): the refusal, and the row's line. The row sits inside the batch its table's rows are
    inserted in, so the line named must be its own."""
    export, damaged = tmp_path / "all.jsonl", tmp_path / "damaged.jsonl"
    run("export", "--db", filled, "--out", export)
    lines = export.read_text(encoding="utf-8").splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith('{"table":"pages"') and n > 40)
    record = json.loads(lines[at])
    record["row"]["namespace"] = None
    damaged.write_text(
        "\n".join([*lines[:at], json.dumps(record), *lines[at + 1 :]]) + "\n", encoding="utf-8"
    )
    return run("import", damaged, "--db", db).refusal(), at + 1


def test_a_row_its_table_refuses_is_named_by_its_line_and_imports_nothing(filled, tmp_path):
    copy = tmp_path / "copy.db"
    refusal, line = import_with_a_row_that_does_not_fit(filled, copy, tmp_path)
    assert refusal.startswith(f"memvm: line {line}: the row does not fit its table ("), refusal
    assert tables_holding_rows(copy) == []


def test_import_refuses_a_database_that_already_holds_memory(filled, tmp_path):
    export, again = tmp_path / "all.jsonl", tmp_path / "again.jsonl"
    run("export", "--db", filled, "--out", export)
    assert "already holds memory" in run("import", export, "--db", filled).refusal()
    run("export", "--db", filled, "--out", again)
    assert again.read_bytes() == export.read_bytes()  # nothing added, nothing doubled


def test_doctor_reports_a_healthy_file(filled):
    done = run("doctor", "--db", filled)
    report = done.stdout
    assert done.status == 0
    assert f"schema {SCHEMA_VERSION} (this memvm: {SCHEMA_VERSION})" in report and report.rstrip().endswith(
        "healthy"
    )
    done = run("doctor", "--db", filled, "--json")
    found = json.loads(done.stdout)
    assert done.status == 0 and found["healthy"] and found["pages"] > 0 and found["namespaces"] == 2
    assert found["checks"] == {
        "integrity": "ok",
        "owner": "ok",
        "foreign_keys": "ok",
        "page_counts": "ok",
        "rows": "ok",
        "search_index": "ok",
    }


def test_gc_deletes_the_expired_pages_that_doctor_counts(db_url):
    an_hour_ago = ManualClock(time.time() - 3600)
    seed(
        db_url,
        notes("parking", "wifi-code", keys=["parking", "wifi-code"], namespace="acme", ttl_seconds=60),
        notes("lasting", keys=["lasting"], namespace="acme"),
        notes("for a day", keys=["day"], namespace="acme", ttl_seconds=86_400),
        clock=an_hour_ago,
    )
    doctor = run("doctor", "--db", db_url, "--json")
    assert doctor.status == 0 and json.loads(doctor.stdout)["expired_waiting"] == 2
    doctor = run("doctor", "--db", db_url)
    assert doctor.status == 0 and "4 pages (2 expired, waiting for memvm gc)" in doctor.stdout
    assert run("gc", "--db", db_url) == Done(0, f"deleted 2 expired pages from {shown(db_url)}\n", "")
    assert sorted(db_rows(db_url, "SELECT page_id FROM pages")) == [("day",), ("lasting",)]
    again = run("gc", "--db", db_url)
    assert again.status == 0 and again.stdout.startswith("deleted 0 expired pages")


def test_an_export_leaves_out_pages_that_expired_before_a_gc_came(db_url):
    an_hour_ago = ManualClock(time.time() - 3600)
    seed(
        db_url,
        notes("the gate code is 4417", keys=["gate"], namespace="acme", ttl_seconds=60),
        clock=an_hour_ago,
    )
    seed(db_url, notes("the pump starts at dawn", keys=["pump"], namespace="acme"))
    exported = run("export", "--db", db_url)
    assert exported.status == 0, exported.stderr
    assert "4417" not in exported.stdout and "pump starts at dawn" in exported.stdout
    # Deleted as a gc deletes them, not only left out of the file; the export reads rows, so the
    # index merge and checkpoint are left owed to the next purge (gc, or a forget).
    assert db_rows(db_url, "SELECT page_id FROM pages") == [("pump",)]
    assert db_rows(db_url, "SELECT count(*) FROM purge_owed") == [(1,)]


def test_gc_on_a_missing_file_says_so_in_one_line(tmp_path):
    assert (
        run("gc", "--db", tmp_path / "none.db").refusal()
        == f"memvm: there is no database at {tmp_path / 'none.db'}"
    )
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
def test_doctor_names_each_problem_and_exits_1(filled, damage, check, says):
    with sqlite3.connect(filled) as conn:
        damage(conn)
    done = run("doctor", "--db", filled, "--json")
    assert done.status == 1
    found = json.loads(done.stdout)
    assert not found["healthy"] and any(says in problem for problem in found["problems"])
    if check:
        assert found["checks"][check] != "ok"


def test_doctor_on_garbage_or_nothing_says_so_without_a_traceback(tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 200)
    done = run("doctor", "--db", garbage)
    assert done.status == 1 and "not a usable SQLite database" in done.stdout
    assert "Traceback" not in done.stderr
    assert (
        run("doctor", "--db", tmp_path / "missing.db").refusal().startswith("memvm: there is no database at")
    )


def test_backup_is_a_checked_copy_and_never_overwrites(filled, tmp_path):
    target = tmp_path / "backup.db"
    done = run("backup", target, "--db", filled)
    assert done.status == 0 and done.stdout.startswith("backed up ") and str(target) in done.stdout
    assert run("doctor", "--db", target).status == 0
    with sqlite3.connect(filled) as original, sqlite3.connect(target) as copy:
        query = "SELECT page_id, content FROM pages JOIN page_texts USING (rowid) ORDER BY rowid"
        assert copy.execute(query).fetchall() == original.execute(query).fetchall()
    assert not Path(str(target) + "-wal").exists() or Path(str(target) + "-wal").stat().st_size == 0
    assert "already exists" in run("backup", target, "--db", filled).refusal()


def test_a_backup_cancelled_at_any_await_leaves_no_file_and_no_connection_thread(filled, tmp_path):
    # Ctrl-C or SIGTERM cancels the command at whatever await it is in. It is cancelled here after
    # more and more turns of the loop (each 10% more) until one backup runs to its end; a backup
    # takes thousands of turns, mostly waiting on a connection's thread.
    async def cancelled_after(turns: int, target: Path) -> bool:
        async with opened_database(str(filled), EngineConfig(), inspect=True) as db:
            before = set(threading.enumerate())
            backing_up = asyncio.ensure_future(db.backup(target))
            for _ in range(turns):
                await asyncio.sleep(0)
            backing_up.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await backing_up
            # Any connection the backup opened is closed: its thread has ended, or ends now (the
            # pool's idle worker threads stay, as they do after any call to a thread).
            for thread in set(threading.enumerate()) - before:
                if "connection" not in thread.name:
                    continue
                await anyio.to_thread.run_sync(thread.join, 10)
                assert not thread.is_alive(), (turns, thread.name)
            return backing_up.cancelled()

    for turns in sorted({int(1.1**step) for step in range(150)}):
        target = tmp_path / f"after-{turns}" / "copy.db"
        target.parent.mkdir()
        if not anyio.run(cancelled_after, turns, target):
            break
        assert list(target.parent.iterdir()) == [], turns
    else:
        pytest.fail("no backup was let run to its end")
    assert [p.name for p in target.parent.iterdir()] == ["copy.db"]
    assert run("doctor", "--db", target).status == 0


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


def test_import_refuses_and_doctor_reports_every_row_that_breaks_a_rule(filled, tmp_path, report_figure):
    refused = found = 0
    for n, (damage, (sql, row, rule)) in enumerate(BAD_ROWS.items()):
        db = tmp_path / f"bad{n}.db"
        db.write_bytes(filled.read_bytes())
        with sqlite3.connect(db) as conn:
            conn.execute(sql)
            assert conn.total_changes >= 1, damage
        doctor = run("doctor", "--db", db)
        assert doctor.status == 1, damage
        report = doctor.stdout
        assert row in report and rule in report, (damage, report)
        found += 1

        export, copy = tmp_path / f"bad{n}.jsonl", tmp_path / f"copy{n}.db"
        assert run("export", "--db", db, "--out", export).status == 0
        line = run("import", export, "--db", copy).refusal()
        assert line.startswith("memvm: table ") and row in line and rule in line, (damage, line)
        assert line.endswith("nothing was imported")
        assert tables_holding_rows(copy) == []
        refused += 1
    report_figure(f"import_validation: bad_rows={len(BAD_ROWS)} refused={refused} doctor_found={found}")
