"""The PostgreSQL backend's own promises: placeholders, migrations, per-namespace write locks,
cancellation, and clear refusals. Behaviour shared with SQLite is tested on both backends by
every other engine test (the `backend` fixture)."""

import anyio
import psycopg
import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.errors import DatabaseRefused, InvalidArgument, StorageBusy
from memvm.engine.models.pages import NewPage, PageType
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.storage.log_limits import KEPT_LOG_INDEXES, KEPT_TEXT
from memvm.engine.storage.open import shown
from memvm.engine.storage.postgres_db import namespace_lock_key

from tests.conftest import NS, db_rows, fresh_postgres_database, note

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def test_a_url_is_shown_without_its_password():
    assert shown("postgresql://memvm:s3cret@db:5432/team") == "postgresql://memvm:***@db:5432/team"
    assert shown("postgresql://memvm@db/team") == "postgresql://memvm@db/team"


def test_lock_keys_are_stable_and_differ_per_namespace():
    assert namespace_lock_key("alice") == namespace_lock_key("alice")
    assert namespace_lock_key("alice") != namespace_lock_key("bob")
    assert -(2**63) <= namespace_lock_key("alice") < 2**63


@pytest.fixture
def url(postgres) -> str:
    return fresh_postgres_database(postgres)


async def test_migrating_twice_is_a_no_op_and_the_version_is_recorded(url):
    for _ in range(2):
        engine = await Engine.open(url)
        await engine.close()
    assert db_rows(url, "SELECT version FROM schema_migrations ORDER BY version") == [
        (13,),
        (14,),
        (15,),
        (16,),
        (17,),
        (18,),
        (19,),
        (20,),
        (21,),
        (22,),
        (23,),
        (24,),
    ]


async def test_a_version_16_database_gets_its_log_text_counted_on_upgrade(url):
    engine = await Engine.open(url)
    for namespace, body in (("a", "x" * 100), ("b", "y" * 10)):
        await engine.session(namespace, "s").bind_value(tool="read", args={}, value=body)
        call = ToolOutcome(tool="send", args={"body": body}, outcome=Outcome.FAILURE, error_message="nope")
        await engine.session(namespace, "s").record_tool_outcome(call=call)
    await engine.close()
    counted = "SELECT namespace, log_chars FROM page_counts ORDER BY namespace"
    expected = db_rows(url, counted)
    # Back to version 16: no count of log text, the mutation log's delete trigger back, no views
    # of live and expired pages, no page vectors (nor their trigger on a page's speaker), and no
    # indexes of transcripts and notes.
    db_rows(url, "DROP INDEX pages_transcripts, pages_remembered")
    db_rows(url, "DROP TRIGGER pages_to_embed_speaker ON pages")
    db_rows(url, "DROP TABLE page_vectors, pages_to_embed, vector_counts")
    db_rows(url, "DROP FUNCTION memvm_page_to_embed CASCADE")
    db_rows(url, "DROP FUNCTION memvm_vector_counts CASCADE")
    db_rows(url, "DROP VIEW live_pages, expired_pages")
    for table in KEPT_TEXT:
        for event in ("insert", "delete"):
            db_rows(url, f"DROP TRIGGER {table}_log_chars_{event} ON {table}")
            db_rows(url, f"DROP FUNCTION memvm_log_chars_{table}_{event}")
    for index in KEPT_LOG_INDEXES:
        db_rows(url, f"DROP INDEX {index.split()[2]}")
    db_rows(url, "ALTER TABLE page_counts DROP COLUMN log_chars")
    db_rows(
        url,
        "CREATE TRIGGER mutation_log_no_delete BEFORE DELETE ON mutation_log "
        "FOR EACH ROW EXECUTE FUNCTION memvm_append_only()",
    )
    db_rows(url, "DELETE FROM schema_migrations WHERE version >= 17")
    engine = await Engine.open(url)
    await engine.close()
    assert db_rows(url, counted) == expected and expected[0][1] > 100 > expected[1][1] > 10


async def test_a_database_made_with_4_byte_ledger_types_gets_sqlites_types(url):
    await (await Engine.open(url)).close()
    # As memvm made them before version 18: REAL (4 bytes) and INTEGER where SQLite's are 8.
    db_rows(url, "ALTER TABLE schema_migrations ALTER COLUMN applied_at TYPE REAL")
    db_rows(url, "ALTER TABLE schema_migrations ALTER COLUMN version TYPE INTEGER")
    db_rows(url, "ALTER TABLE purge_owed ALTER COLUMN id TYPE INTEGER")
    db_rows(url, "DELETE FROM schema_migrations WHERE version = 18")
    await (await Engine.open(url)).close()
    types = (
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_name IN ('schema_migrations', 'purge_owed') AND column_name <> 'name' ORDER BY 1, 2"
    )
    assert db_rows(url, types) == [
        ("purge_owed", "id", "bigint"),
        ("schema_migrations", "applied_at", "double precision"),
        ("schema_migrations", "version", "bigint"),
    ]
    # The time a migration was applied keeps its seconds.
    (applied,) = db_rows(url, "SELECT applied_at FROM schema_migrations WHERE version = 18")[0]
    assert applied != round(applied, -3)


async def test_a_database_from_a_newer_memvm_is_refused(url):
    db_rows(url, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
    with pytest.raises(DatabaseRefused, match="newer than this memvm"):
        await Engine.open(url)


async def test_read_only_refuses_a_database_never_migrated(postgres):
    blank = fresh_postgres_database(postgres).rsplit("/", 1)[0] + "/blank_db"
    postgres.admin("DROP DATABASE IF EXISTS blank_db")
    postgres.admin("CREATE DATABASE blank_db")
    with pytest.raises(DatabaseRefused, match="schema version 0"):
        await Engine.open(blank, EngineConfig(read_only=True))


async def test_an_unreachable_server_is_refused_in_words_without_the_password():
    with pytest.raises(DatabaseRefused) as refused:
        await Engine.open("postgresql://memvm:hunter2@127.0.0.1:1/nowhere")
    assert "cannot connect to PostgreSQL at postgresql://memvm:***@127.0.0.1:1/nowhere" in str(refused.value)
    assert "hunter2" not in str(refused.value)


async def test_a_file_size_cap_is_refused_on_postgresql(url):
    with pytest.raises(DatabaseRefused, match="max-db-mb caps a SQLite file"):
        await Engine.open(url, EngineConfig(max_db_mb=10))


def _hold_namespace(url: str, namespace: str) -> psycopg.Connection:
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("BEGIN")
    conn.execute(f"SELECT pg_advisory_xact_lock({namespace_lock_key(namespace)})")  # type: ignore[arg-type]
    return conn


async def test_a_held_namespace_is_busy_and_other_namespaces_write_on(url):
    engine = await Engine.open(url, EngineConfig(busy_timeout_ms=200))
    holder = _hold_namespace(url, NS)
    try:
        other = await engine.session("elsewhere", "s").remember(page=note("not held up"))
        with pytest.raises(StorageBusy):
            await engine.session(NS, "s").remember(page=note("waits, then gives up"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    stored = await engine.session(NS, "s").remember(page=note("goes through once released"))
    await engine.close()
    assert other.page_id and stored.page_id
    assert db_rows(url, "SELECT count(*) FROM pages WHERE namespace = ?", (NS,)) == [(1,)]


async def test_a_write_cancelled_while_it_waits_for_the_lock_holds_nothing_afterwards(url):
    engine = await Engine.open(url, EngineConfig(busy_timeout_ms=10_000))
    holder = _hold_namespace(url, NS)
    try:
        with anyio.move_on_after(0.2) as waited:
            await engine.session(NS, "s").remember(page=note("cancelled while waiting"))
        assert waited.cancelled_caught  # it was waiting, not done
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    stored = await engine.session(NS, "s").remember(page=note("the next write"))
    held = db_rows(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
    await engine.close()
    assert held == [(0,)]
    assert [row[0] for row in db_rows(url, "SELECT page_id FROM pages")] == [stored.page_id]


async def test_two_engines_on_one_database_number_a_namespaces_calls_without_gaps(url):
    # Two pools are two processes as far as the server knows. Call ids count per namespace, across
    # its sessions: the next one is read and written inside the namespace's lock, so none is lost
    # or given twice (without the lock, concurrent writers collided on the same number).
    first, second = await Engine.open(url), await Engine.open(url)
    ids: list[int] = []

    async def record_many(engine: Engine, session: str) -> None:
        for i in range(40):
            call = ToolOutcome(tool="t", args={"i": i}, outcome=Outcome.SUCCESS)
            ids.append((await engine.session(NS, session).record_tool_outcome(call=call)).call_id)

    async with anyio.create_task_group() as group:
        for n, engine in enumerate((first, second, first, second)):
            group.start_soon(record_many, engine, f"session-{n}")
    await first.close()
    await second.close()
    assert sorted(ids) == list(range(1, 161))


async def test_a_server_that_dropped_its_connections_is_reconnected_without_an_error(url, postgres):
    engine = await Engine.open(url)
    await engine.session(NS, "s").remember(page=note("before the drop"))
    name = url.rsplit("/", 1)[1]
    postgres.admin(
        f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    found = await engine.session(NS, "s").search(query="drop")
    stored = await engine.session(NS, "s").remember(page=note("after the drop"))
    await engine.close()
    assert [hit.page_id for hit in found.results] and stored.page_id


async def test_a_nul_character_is_refused_in_words_and_stores_nothing(url):
    engine = await Engine.open(url)
    try:
        for page in (
            note("before\x00after"),
            NewPage(content="fine", type=PageType.NOTE, provenance="user", metadata={"name": "x\x00y"}),
        ):
            with pytest.raises(InvalidArgument, match=r"NUL character \(U\+0000\).*remove it"):
                await engine.session(NS, "s").remember(page=page)
        stored = await engine.session(NS, "s").remember(page=note("clean text goes through"))
    finally:
        await engine.close()
    assert [row[0] for row in db_rows(url, "SELECT page_id FROM pages")] == [stored.page_id]
