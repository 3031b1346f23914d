import sqlite3

import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.db import APPLICATION_ID
from memvm.engine.errors import DatabaseRefused
from memvm.engine.migrations import MIGRATIONS, applied_versions, migrate

pytestmark = pytest.mark.anyio


async def test_blank_database_is_migrated_and_records_every_version(engine, db_path):
    with sqlite3.connect(db_path) as conn:
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert versions == [m.version for m in MIGRATIONS]
    assert {"pages", "sessions", "working_set", "mutation_log", "pages_fts"} <= tables
    assert app_id == APPLICATION_ID
    assert journal == "wal"


async def test_migrating_twice_is_a_no_op(engine):
    assert await migrate(engine.db.writer) == []
    assert await applied_versions(engine.db.writer) == [m.version for m in MIGRATIONS]


async def test_every_connection_sets_its_pragmas(engine):
    for conn in (engine.db.writer, engine.db._reader):
        async with conn.execute("PRAGMA busy_timeout") as cur:
            assert (await cur.fetchone())[0] == 10_000
        async with conn.execute("PRAGMA foreign_keys") as cur:
            assert (await cur.fetchone())[0] == 1
        async with conn.execute("PRAGMA synchronous") as cur:
            assert (await cur.fetchone())[0] == 2  # FULL


async def test_a_foreign_sqlite_file_is_refused_and_left_untouched(db_path):
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    with pytest.raises(DatabaseRefused, match="another program"):
        await Engine.open(db_path, EngineConfig())
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT total FROM invoices").fetchall() == [(12.5,)]
        assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'pages'").fetchone()[0] == 0


@pytest.mark.parametrize(
    "garbage",
    [
        b"this is a text file, not a database\n" * 40,
        bytes(range(256)) * 64,
        b"SQLite format 3\x00" + b"\xff" * 3000,
    ],
)
async def test_a_file_that_is_not_a_database_is_refused(db_path, garbage):
    db_path.write_bytes(garbage)
    with pytest.raises(DatabaseRefused):
        await Engine.open(db_path, EngineConfig())
    assert db_path.read_bytes() == garbage


async def test_a_database_from_a_newer_memvm_is_refused(engine, db_path):
    await engine.close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (999, 'from the future', 0)")
    with pytest.raises(DatabaseRefused, match="newer"):
        await Engine.open(db_path, EngineConfig())


async def test_in_memory_database_works_for_throwaway_runs():
    engine = await Engine.open(":memory:")
    try:
        from tests.conftest import note

        stored = await engine.remember(namespace="ns", session="s", page=note("throwaway fact about kiwis"))
        found = await engine.search(namespace="ns", session="s", query="kiwis")
        assert [hit.page_id for hit in found.results] == [stored.page_id]
    finally:
        await engine.close()


async def test_read_only_refuses_a_file_that_needs_a_migration(open_engine, db_path):
    sqlite3.connect(db_path).close()  # an empty file: not at the current schema
    with pytest.raises(DatabaseRefused, match="read-only"):
        await open_engine(read_only=True)
