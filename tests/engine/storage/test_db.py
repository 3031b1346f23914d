import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable

import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.errors import DatabaseRefused, StorageBusy, StorageFull
from memvm.engine.storage.migrations import MIGRATIONS, applied_versions, migrate
from memvm.engine.storage.sqlite_file import APPLICATION_ID

from tests.conftest import note

# About SQLite itself: its file, its pragmas, its migrations and its FTS5 index.
pytestmark = [pytest.mark.anyio, pytest.mark.sqlite_only]


async def test_blank_database_is_migrated_and_records_every_version(engine, db_path):
    with sqlite3.connect(db_path) as conn:
        versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert versions == [m.version for m in MIGRATIONS["sqlite"]]
    assert {"pages", "sessions", "working_set", "mutation_log", "pages_fts"} <= tables
    assert app_id == APPLICATION_ID
    assert journal == "wal"


async def test_migrating_twice_is_a_no_op(engine):
    assert await migrate(engine.db) == []
    async with engine.db.read(None) as conn:
        assert await applied_versions(conn) == [m.version for m in MIGRATIONS["sqlite"]]


async def test_every_connection_sets_its_pragmas(engine):
    # The writer waits a short slice inside SQLite and the engine retries; readers just wait.
    async with engine.db.read(None) as reads, engine.db.write() as writes:
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

        stored = await engine.session("ns", "s").remember(page=note("throwaway fact about kiwis"))
        found = await engine.session("ns", "s").search(query="kiwis")
        assert [hit.page_id for hit in found.results] == [stored.page_id]
    finally:
        await engine.close()


async def test_read_only_refuses_a_file_that_needs_a_migration(open_engine, db_path):
    sqlite3.connect(db_path).close()  # an empty file: not at the current schema
    with pytest.raises(DatabaseRefused, match="read-only"):
        await open_engine(read_only=True)


class LockHolder(threading.Thread):
    """Another program's long write transaction: the file's write lock, held until `done()` is true.

    Holding it until something has happened, rather than for a fixed time, keeps the tests below
    independent of how busy the machine is; the minute is only a backstop against a hang.
    """

    def __init__(self, db_path, done: Callable[[], bool]) -> None:
        super().__init__()
        self.db_path, self.done = db_path, done
        self.taken = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.db_path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            self.taken.set()
            backstop = time.monotonic() + 60
            while not self.done() and time.monotonic() < backstop:
                time.sleep(0.01)
            conn.execute("COMMIT")
        finally:
            conn.close()


async def test_a_write_waits_out_another_process_lock_by_retrying(open_engine, db_path):
    engine = await open_engine()
    # The lock is let go only after the engine has retried three times (three 100 ms slices).
    holder = LockHolder(db_path, lambda: engine.db.busy_retries >= 3)
    holder.start()
    try:
        assert holder.taken.wait(10)
        stored = await engine.session("ns", "s").remember(page=note("Written after the lock."))
    finally:
        holder.join()
    assert engine.db.busy_retries >= 3
    page = await engine.namespace("ns").get_page(page_id=stored.page_id)
    assert page.levels[0] == "Written after the lock."


async def test_a_lock_held_past_the_busy_timeout_is_storage_busy_and_writes_nothing(open_engine, db_path):
    engine = await open_engine(busy_timeout_ms=300)
    # The other program holds the lock until the write has given up at its own deadline.
    given_up = threading.Event()
    holder = LockHolder(db_path, given_up.is_set)
    holder.start()
    try:
        assert holder.taken.wait(10)
        with pytest.raises(StorageBusy):
            await engine.session("ns", "s").remember(page=note("Never written."))
    finally:
        given_up.set()
        holder.join()
    assert engine.db.busy_retries >= 1
    found = await engine.session("ns", "s").search(query="Never written")
    assert found.results == []


async def test_the_quota_counts_the_wal_that_a_reader_holding_a_snapshot_keeps_growing(
    open_engine, db_path, report_figure
):
    quota = 2 * 2**20
    engine = await open_engine(EngineConfig(max_db_mb=2))
    await engine.session("default", "s").remember(page=note("a first note"))
    # Another program reads and keeps its snapshot open: no checkpoint can fold the WAL back.
    reader = sqlite3.connect(db_path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM pages").fetchone()
    stored = largest = 0
    try:
        for i in range(200):  # about 12 MiB of text if nothing stopped it
            try:
                await engine.session("default", "s").remember(page=note(f"{i} " + "word " * 12_000))
            except StorageFull:
                break
            stored += 1
            largest = max(largest, _on_disk(db_path))
        else:
            pytest.fail("the quota never stopped a write while the WAL grew")
    finally:
        reader.close()
    # One write may take the total past the quota by its own size (about 0.2 MiB here); no more.
    assert stored >= 2 and largest <= quota + 2**20
    # With the reader gone the WAL folds back and the next write fits again.
    after = await engine.session("default", "s").remember(page=note("after the reader left"))
    assert after.page_id
    report_figure(
        f"quota_wal: stored={stored} max_on_disk={largest / 2**20:.1f}MiB quota=2.0MiB recovered=True"
    )


def _on_disk(db_path) -> int:
    wal = db_path.with_name(db_path.name + "-wal")
    return db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


async def test_a_new_database_and_its_wal_are_readable_by_their_owner_alone(tmp_path):
    db = tmp_path / "new.db"
    before = os.umask(0o022)  # a usual umask, which would leave a file readable by everyone
    try:
        engine = await Engine.open(db)
        try:
            await engine.session("default", "s1").remember(page=note("my home address is private"))
            modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in tmp_path.iterdir()}
        finally:
            await engine.close()
    finally:
        os.umask(before)
    assert modes == {"new.db": 0o600, "new.db-wal": 0o600, "new.db-shm": 0o600}


async def test_an_existing_database_keeps_the_mode_its_owner_gave_it(tmp_path):
    db = tmp_path / "shared.db"
    engine = await Engine.open(db)
    await engine.close()
    db.chmod(0o640)
    engine = await Engine.open(db)
    await engine.close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o640
