"""Applying the schema: each migration runs once, recorded in `schema_migrations`, all in one write
transaction; running `migrate` again is a no-op. The migrations themselves are in `sqlite_schema`.
"""

import sqlite3
import time

from memvm.engine.errors import DatabaseRefused
from memvm.engine.storage.db import Database, Reads
from memvm.engine.storage.sqlite_schema import MIGRATIONS, SCHEMA_VERSION

_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at REAL NOT NULL
)
"""


async def applied_versions(conn: Reads) -> list[int]:
    return [row[0] for row in await conn.all("SELECT version FROM schema_migrations ORDER BY version")]


async def check_current(db: Database) -> None:
    """For a read-only open: refuse a file that is not at this memvm's schema version."""
    newest = SCHEMA_VERSION
    try:
        async with db.read() as conn:
            done = await applied_versions(conn)
    except sqlite3.OperationalError:  # no ledger: an empty or new file
        done = []
    if not done or max(done) != newest:
        raise DatabaseRefused(
            f"it is read-only and at schema version {max(done, default=0)}, not {newest}; "
            "open it once without --read-only to migrate it"
        )


async def migrate(db: Database) -> list[int]:
    """Apply every migration not yet recorded, in one write transaction; return the versions applied now."""
    # One transaction through the engine's write path: a second process starting at the same
    # moment waits (and retries) for the lock, then finds the work done.
    async with db.write() as conn:
        await conn.execute(_CREATE_LEDGER)
        done = set(await applied_versions(conn))
        newest = SCHEMA_VERSION
        if done and max(done) > newest:
            raise DatabaseRefused(
                f"the database has schema version {max(done)}, newer than this memvm ({newest}); upgrade memvm"
            )
        applied = []
        for migration in MIGRATIONS:
            if migration.version in done:
                continue
            for statement in migration.statements:
                await conn.execute(statement)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            applied.append(migration.version)
        await conn.execute(f"PRAGMA user_version = {newest}")
    return applied
