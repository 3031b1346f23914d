import sqlite3
import threading
import time

import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.db import APPLICATION_ID
from memvm.engine.errors import DatabaseRefused, StorageBusy
from memvm.engine.migrations import MIGRATIONS, applied_versions, migrate

from tests.conftest import note

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
    assert await migrate(engine.db) == []
    async with engine.db.read() as conn:
        assert await applied_versions(conn) == [m.version for m in MIGRATIONS]


async def test_every_connection_sets_its_pragmas(engine):
    # The writer waits a short slice inside SQLite and the engine retries; readers just wait.
    async with engine.db.read() as reads, engine.db.write() as writes:
        for conn, busy_ms in ((writes, 100), (reads, 10_000)):
            assert (await conn.one("PRAGMA busy_timeout"))[0] == busy_ms
            assert (await conn.one("PRAGMA foreign_keys"))[0] == 1
            assert (await conn.one("PRAGMA synchronous"))[0] == 2  # FULL


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


class LockHolder(threading.Thread):
    """Another program's long write transaction: the file's write lock, held for `seconds`."""

    def __init__(self, db_path, seconds: float) -> None:
        super().__init__()
        self.db_path, self.seconds = db_path, seconds
        self.taken, self.released = threading.Event(), threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.db_path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            self.taken.set()
            time.sleep(self.seconds)
            conn.execute("COMMIT")
            self.released.set()
        finally:
            conn.close()


async def test_a_write_waits_out_another_process_lock_by_retrying(open_engine, db_path):
    engine = await open_engine()
    holder = LockHolder(db_path, 0.6)
    holder.start()
    try:
        assert holder.taken.wait(10)
        stored = await engine.remember(namespace="ns", session="s", page=note("Written after the lock."))
    finally:
        holder.join()
    # 0.6 s is six of the writer's 100 ms slices inside SQLite: the engine must have retried.
    assert engine.db.busy_retries >= 3
    page = await engine.get_page(namespace="ns", page_id=stored.page_id)
    assert page.levels[0] == "Written after the lock."


async def test_a_lock_held_past_the_busy_timeout_is_storage_busy_and_writes_nothing(open_engine, db_path):
    engine = await open_engine(busy_timeout_ms=300)
    holder = LockHolder(db_path, 3.0)
    holder.start()
    try:
        assert holder.taken.wait(10)
        with pytest.raises(StorageBusy):
            await engine.remember(namespace="ns", session="s", page=note("Never written."))
        # It gave up at its own deadline, while the other program still held the lock.
        assert not holder.released.is_set()
    finally:
        holder.join()
    assert engine.db.busy_retries >= 1
    found = await engine.search(namespace="ns", session="s", query="Never written")
    assert found.results == []
