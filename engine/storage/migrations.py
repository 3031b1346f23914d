"""Applying the schema: each migration runs once, recorded in `schema_migrations`, all in one write
transaction; running `migrate` again is a no-op. Each backend's list is its own history up to
version 13 (`sqlite_schema`, `postgres_schema`), then the versions written for both at once
(`schema_changes`).
"""

import time

from memvm.engine.errors import DatabaseRefused
from memvm.engine.storage import postgres_schema, sqlite_schema
from memvm.engine.storage.api import Database, Reads
from memvm.engine.storage.migration import Migration
from memvm.engine.storage.schema_changes import CHANGES
from memvm.engine.storage.statements import statement

MIGRATIONS: dict[str, tuple[Migration, ...]] = {
    "sqlite": (*sqlite_schema.BASE, *(change.on("sqlite") for change in CHANGES)),
    "postgresql": (*postgres_schema.BASE, *(change.on("postgresql") for change in CHANGES)),
}

# The schema version this memvm writes and expects, on either backend.
SCHEMA_VERSION = CHANGES[-1].version

_APPLIED = statement(
    "migrations.applied",
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (:version, :name, :now)",
)

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version {integer} PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at {real} NOT NULL
)
"""


def ledger_sql(backend: str) -> str:
    """The statement creating the record of applied migrations, on `backend`."""
    if backend == "sqlite":
        return _LEDGER.format(integer="INTEGER", real="REAL")
    return _LEDGER.format(integer="BIGINT", real="DOUBLE PRECISION")


_HAS_LEDGER = {
    "sqlite": "SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'",
    "postgresql": "SELECT count(*) FROM pg_tables WHERE tablename = 'schema_migrations' "
    "AND schemaname = current_schema()",
}


def migrations_of(db: Database) -> tuple[Migration, ...]:
    return MIGRATIONS[db.backend]


async def applied_versions(conn: Reads) -> list[int]:
    return [row[0] for row in await conn.all("SELECT version FROM schema_migrations ORDER BY version")]


async def check_current(db: Database) -> None:
    """For a read-only open: refuse a file that is not at this memvm's schema version."""
    newest = SCHEMA_VERSION
    async with db.read(None) as conn:
        ledger = await conn.one(_HAS_LEDGER[db.backend])
        done = await applied_versions(conn) if ledger and ledger[0] else []
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
        await conn.execute(ledger_sql(db.backend))
        done = set(await applied_versions(conn))
        newest = SCHEMA_VERSION
        if done and max(done) > newest:
            raise DatabaseRefused(
                f"the database has schema version {max(done)}, newer than this memvm ({newest}); upgrade memvm"
            )
        applied = []
        for migration in migrations_of(db):
            if migration.version in done:
                continue
            for statement in migration.statements:
                await conn.execute(statement)
            await conn.execute(_APPLIED, version=migration.version, name=migration.name, now=time.time())
            applied.append(migration.version)
        if db.backend == "sqlite":
            await conn.execute(f"PRAGMA user_version = {newest}")
    return applied
