"""The operator's commands on PostgreSQL, through `memvm`'s own entry point: export and import in
both directions between the backends (byte for byte), doctor, and what is refused."""

import json
from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine
from memvm.engine.storage.migrations import SCHEMA_VERSION

from tests.commands import run
from tests.conftest import db_rows, fresh_postgres_database, note
from tests.seeding import every_table, seed
from tests.server.test_operations import BAD_ROWS, NAMESPACES, answers_of, import_with_a_row_that_does_not_fit
from tests.stored import tables_holding_rows

pytestmark = pytest.mark.slow


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    return seed(tmp_path / "memvm.db", every_table(NAMESPACES))


def test_sqlite_to_postgresql_and_back_is_byte_for_byte_the_same(filled, tmp_path, postgres):
    url = fresh_postgres_database(postgres)
    first, second, third = (tmp_path / f"{name}.jsonl" for name in ("first", "second", "third"))
    copy = tmp_path / "copy.db"
    assert run("export", "--db", filled, "--out", first).status == 0
    imported = run("import", first, "--db", url)
    assert imported.status == 0 and "imported" in imported.stdout
    assert run("export", "--db", url, "--out", second).status == 0
    assert second.read_bytes() == first.read_bytes()
    assert run("import", second, "--db", copy).status == 0
    assert run("export", "--db", copy, "--out", third).status == 0
    assert third.read_bytes() == first.read_bytes()
    rows = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    assert len(rows) > 40 and {row.get("table") for row in rows[1:-1]} >= {"pages", "tool_calls", "bindings"}


def test_an_import_into_postgresql_searches_and_serves_like_the_original(filled, tmp_path, postgres):
    url = fresh_postgres_database(postgres)
    export = tmp_path / "all.jsonl"
    run("export", "--db", filled, "--out", export)
    run("import", export, "--db", url)
    assert anyio.run(answers_of, url) == anyio.run(answers_of, filled)
    assert run("doctor", "--db", url).status == 0

    async def write_after() -> str:
        engine = await Engine.open(url)
        try:  # the identity counters moved past the imported rows
            return (await engine.session("acme", "later").remember(page=note("after import"))).page_id
        finally:
            await engine.close()

    assert anyio.run(write_after)


def test_import_refuses_a_postgresql_database_that_holds_memory(filled, tmp_path, postgres):
    url = fresh_postgres_database(postgres)
    export, again = tmp_path / "all.jsonl", tmp_path / "again.jsonl"
    run("export", "--db", filled, "--out", export)
    assert run("import", export, "--db", url).status == 0
    assert "already holds memory" in run("import", export, "--db", url).refusal()
    run("export", "--db", url, "--out", again)
    assert again.read_bytes() == export.read_bytes()  # nothing added, nothing doubled


def test_a_damaged_export_imports_nothing_into_postgresql(filled, tmp_path, postgres):
    url = fresh_postgres_database(postgres)
    export = tmp_path / "all.jsonl"
    run("export", "--db", filled, "--out", export)
    lines = export.read_text(encoding="utf-8").splitlines()
    export.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # cut short
    assert "cut short" in run("import", export, "--db", url).refusal()
    assert db_rows(url, "SELECT count(*) FROM pages") == [(0,)]


def test_a_row_postgresql_refuses_is_named_by_its_line_and_imports_nothing(filled, tmp_path, postgres):
    url = fresh_postgres_database(postgres)
    refusal, line = import_with_a_row_that_does_not_fit(filled, url, tmp_path)
    assert refusal.startswith(f"memvm: line {line}: the row does not fit its table ("), refusal
    assert tables_holding_rows(url) == []


def test_import_into_postgresql_refuses_every_row_that_breaks_a_rule(filled, tmp_path, postgres):
    # The rules are checked on PostgreSQL itself, by the same code as on SQLite: the same lines.
    for n, (damage, (sql, row, rule)) in enumerate(BAD_ROWS.items()):
        db, export = tmp_path / f"bad{n}.db", tmp_path / f"bad{n}.jsonl"
        db.write_bytes(filled.read_bytes())
        db_rows(db, sql)
        assert run("export", "--db", db, "--out", export).status == 0
        url = fresh_postgres_database(postgres)
        line = run("import", export, "--db", url).refusal()
        assert line.startswith("memvm: table ") and row in line and rule in line, (damage, line)
        assert line.endswith("nothing was imported")
        assert db_rows(url, "SELECT count(*) FROM pages") == [(0,)]


def test_doctor_checks_a_postgresql_database_and_names_a_broken_index(filled, tmp_path, postgres):
    url = fresh_postgres_database(postgres)
    export = tmp_path / "all.jsonl"
    run("export", "--db", filled, "--out", export)
    run("import", export, "--db", url)
    doctor = run("doctor", "--db", url, "--json")
    assert doctor.status == 0
    found = json.loads(doctor.stdout)
    assert found["healthy"] and found["schema_version"] == SCHEMA_VERSION and found["namespaces"] == 2
    assert found["checks"]["page_counts"] == "ok" and found["checks"]["search_index"].startswith("ok")
    [(victim,)] = db_rows(url, "SELECT min(page_rowid) FROM page_terms")
    db_rows(url, "DELETE FROM page_terms WHERE page_rowid = ?", (victim,))
    db_rows(url, "UPDATE page_counts SET pages = pages + 1 WHERE namespace = 'acme'")
    doctor = run("doctor", "--db", url)
    assert doctor.status == 1
    report = doctor.stdout
    assert "1 pages unindexed" in report and "page counts disagree with the pages in 1 namespaces" in report
    assert report.rstrip().endswith("2 problem(s) found")


def test_doctor_on_an_unreachable_server_says_so_in_one_line():
    line = run("doctor", "--db", "postgresql://memvm:pw@127.0.0.1:1/none").refusal()
    assert line.startswith("memvm: cannot connect to PostgreSQL at postgresql://memvm:***@127.0.0.1:1/none")
    assert "pw@" not in line


def test_backup_of_postgresql_points_at_pg_dump(postgres, tmp_path):
    url = fresh_postgres_database(postgres)
    assert "pg_dump" in run("backup", tmp_path / "copy.db", "--db", url).refusal()
