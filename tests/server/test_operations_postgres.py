"""The operator's commands on PostgreSQL, through `memvm`'s own entry point: export and import in
both directions between the backends (byte for byte), doctor, and what is refused."""

import json
from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine
from memvm.engine.storage.migrations import SCHEMA_VERSION

from tests.conftest import db_rows, fresh_postgres_database, note
from tests.server.test_operations import answers_of, fill, run

pytestmark = pytest.mark.slow


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    db = tmp_path / "memvm.db"
    anyio.run(fill, db)
    return db


def test_sqlite_to_postgresql_and_back_is_byte_for_byte_the_same(filled, tmp_path, postgres, capsys):
    url = fresh_postgres_database(postgres)
    first, second, third = (tmp_path / f"{name}.jsonl" for name in ("first", "second", "third"))
    copy = tmp_path / "copy.db"
    assert run("export", "--db", filled, "--out", first) == 0
    assert run("import", first, "--db", url) == 0
    assert "imported" in capsys.readouterr().out
    assert run("export", "--db", url, "--out", second) == 0
    assert second.read_bytes() == first.read_bytes()
    assert run("import", second, "--db", copy) == 0
    assert run("export", "--db", copy, "--out", third) == 0
    assert third.read_bytes() == first.read_bytes()
    rows = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    assert len(rows) > 40 and {row.get("table") for row in rows[1:-1]} >= {"pages", "tool_calls", "bindings"}


def test_an_import_into_postgresql_searches_and_serves_like_the_original(filled, tmp_path, postgres):
    url = fresh_postgres_database(postgres)
    export = tmp_path / "all.jsonl"
    run("export", "--db", filled, "--out", export)
    run("import", export, "--db", url)
    assert anyio.run(answers_of, url) == anyio.run(answers_of, filled)
    assert run("doctor", "--db", url) == 0

    async def write_after() -> str:
        engine = await Engine.open(url)
        try:  # the identity counters moved past the imported rows
            return (
                await engine.remember(namespace="acme", session="later", page=note("after import"))
            ).page_id
        finally:
            await engine.close()

    assert anyio.run(write_after)


def test_import_refuses_a_postgresql_database_that_holds_memory(filled, tmp_path, postgres, capsys):
    url = fresh_postgres_database(postgres)
    export, again = tmp_path / "all.jsonl", tmp_path / "again.jsonl"
    run("export", "--db", filled, "--out", export)
    assert run("import", export, "--db", url) == 0
    assert run("import", export, "--db", url) == 2
    assert "already holds memory" in capsys.readouterr().err
    run("export", "--db", url, "--out", again)
    assert again.read_bytes() == export.read_bytes()  # nothing added, nothing doubled


def test_a_damaged_export_imports_nothing_into_postgresql(filled, tmp_path, postgres, capsys):
    url = fresh_postgres_database(postgres)
    export = tmp_path / "all.jsonl"
    run("export", "--db", filled, "--out", export)
    lines = export.read_text(encoding="utf-8").splitlines()
    export.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # cut short
    assert run("import", export, "--db", url) == 2
    assert "cut short" in capsys.readouterr().err
    assert db_rows(url, "SELECT count(*) FROM pages") == [(0,)]


def test_doctor_checks_a_postgresql_database_and_names_a_broken_index(filled, tmp_path, postgres, capsys):
    url = fresh_postgres_database(postgres)
    export = tmp_path / "all.jsonl"
    run("export", "--db", filled, "--out", export)
    run("import", export, "--db", url)
    capsys.readouterr()
    assert run("doctor", "--db", url, "--json") == 0
    found = json.loads(capsys.readouterr().out)
    assert found["healthy"] and found["schema_version"] == SCHEMA_VERSION and found["namespaces"] == 2
    assert found["checks"]["page_counts"] == "ok" and found["checks"]["search_index"].startswith("ok")
    [(victim,)] = db_rows(url, "SELECT min(page_rowid) FROM page_terms")
    db_rows(url, "DELETE FROM page_terms WHERE page_rowid = ?", (victim,))
    db_rows(url, "UPDATE page_counts SET pages = pages + 1 WHERE namespace = 'acme'")
    assert run("doctor", "--db", url) == 1
    report = capsys.readouterr().out
    assert "1 pages unindexed" in report and "page counts disagree with the pages in 1 namespaces" in report
    assert report.rstrip().endswith("2 problem(s) found")


def test_doctor_on_an_unreachable_server_says_so_in_one_line(capsys):
    assert run("doctor", "--db", "postgresql://memvm:pw@127.0.0.1:1/none") == 2
    err = capsys.readouterr().err
    assert err.startswith("memvm: cannot connect to PostgreSQL at postgresql://memvm:***@127.0.0.1:1/none")
    assert "pw@" not in err and "Traceback" not in err and err.count("\n") == 1


def test_backup_of_postgresql_points_at_pg_dump(postgres, capsys, tmp_path):
    url = fresh_postgres_database(postgres)
    assert run("backup", tmp_path / "copy.db", "--db", url) == 2
    assert "pg_dump" in capsys.readouterr().err
