"""Shared fixtures: real SQLite files in a temporary directory, a real PostgreSQL server (a
throwaway one, see postgres_server), a manual clock, real MCP clients.

`backend` runs each test that opens an engine through these fixtures on both backends. Without
PostgreSQL on the machine its half skips, with one line saying how to enable it; with
MEMVM_REQUIRE_POSTGRES=1 (CI) it fails instead.
"""

import itertools
import os
import shutil
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from memvm.engine import Engine, EngineConfig
from memvm.engine.clock import ManualClock
from memvm.engine.models.pages import NewPage, PageType, Role
from memvm.engine.models.writes import IngestMessage
from memvm.engine.storage.open import is_postgres_url

from tests.placeholders import query  # noqa: F401 -- the tests take it from here

NS = "default"

# Property tests check behaviour: hypothesis's 200 ms deadline per example and its too-slow health
# check are timings, which a busy machine fails. The fast stage tries a fifth of the examples (a
# developer runs it many times a day); the end-to-end stage runs every property test again with all
# of them (`examples`).
_QUIET = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("fast", max_examples=20, **_QUIET)
settings.register_profile("thorough", max_examples=100, **_QUIET)
settings.load_profile("fast")
_THOROUGH = "MEMVM_THOROUGH_PROPERTIES"


def examples(thorough: int) -> int:
    """How many examples a property test with its own count tries in this run."""
    return thorough if os.environ.get(_THOROUGH) == "1" else max(10, thorough // 5)


def _runs_slow_tests(config: pytest.Config) -> bool:
    """Whether this run's -m selects the end-to-end stage (`slow`, `slow or not slow`)."""
    expression = (config.option.markexpr or "").strip()
    return "slow" in expression and expression != "not slow"


EngineFactory = Callable[..., Awaitable[Engine]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memvm.db"


# One template per parallel worker: each worker has its own session, and with MEMVM_TEST_POSTGRES
# they share one server.
_TEMPLATE = f"memvm_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
_numbers = itertools.count(1)
_created: list[str] = []


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """The session's PostgreSQL server, with an empty, migrated template database."""
    try:
        from tests import postgres_server

        server = postgres_server.start()
    except (ImportError, RuntimeError, OSError, subprocess.SubprocessError) as exc:
        if os.environ.get("MEMVM_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is required here (MEMVM_REQUIRE_POSTGRES=1) but cannot start: {exc}")
        if isinstance(exc, ImportError):  # the driver is missing: the postgres extra is not installed
            pytest.skip("PostgreSQL tests skipped: pip install -e '.[test]' brings their driver")
        pytest.skip(str(exc) if isinstance(exc, RuntimeError) else f"PostgreSQL tests skipped: {exc}")
    server.admin(f"DROP DATABASE IF EXISTS {_TEMPLATE}")
    server.admin(f"CREATE DATABASE {_TEMPLATE}")
    import anyio

    async def migrate() -> None:
        engine = await Engine.open(server.database_url(_TEMPLATE))
        await engine.close()

    anyio.run(migrate)
    yield server
    # A server of the tester's own (MEMVM_TEST_POSTGRES) keeps nothing of the run; a throwaway one
    # goes whole.
    if os.environ.get("MEMVM_TEST_POSTGRES"):
        for name in [*_created, _TEMPLATE]:
            server.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    server.stop()


def fresh_postgres_database(server: Any) -> str:
    """The URL of a new database, migrated and empty (copied from the template: ~20 ms)."""
    name = f"t{os.getpid()}_{next(_numbers)}"
    server.admin(f"CREATE DATABASE {name} TEMPLATE {_TEMPLATE} STRATEGY FILE_COPY")
    _created.append(name)
    return str(server.database_url(name))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only: the test is about SQLite itself (its file, WAL, pragmas); not run on PostgreSQL",
    )
    config.addinivalue_line(
        "markers",
        "above_storage: the test's subject sits above the storage seam (a browser, a process's "
        "signals, sockets and pipes), and tests in process cover what it reads and writes on both "
        "backends; not run on PostgreSQL",
    )
    config.addinivalue_line(
        "markers",
        "properties: a property test whose @given is inside it; run again in the end-to-end stage, "
        "as every hypothesis test is, with all its examples",
    )
    if _runs_slow_tests(config):
        # Set before the test modules are imported, whose @settings call `examples`; parallel
        # workers configure themselves from the same command line.
        os.environ[_THOROUGH] = "1"
        settings.load_profile("thorough")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker per core for the fast stage, which keeps its cores busy; two per core
    for the end-to-end stage, whose tests mostly wait (on processes starting, sockets, deadlines)
    and would leave the cores half idle."""
    cores = os.cpu_count() or 1
    return 2 * cores if _runs_slow_tests(config) else cores


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the PostgreSQL run of tests about SQLite itself or about what sits above storage;
    run the rest with the end-to-end stage (`-m slow`), so that a developer's plain `pytest` stays
    quick and needs no server."""
    thorough = _runs_slow_tests(config)
    kept, dropped = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        on_postgres = params.get("backend") == "postgresql"
        if on_postgres or (thorough and _is_property_test(item)):
            item.add_marker(pytest.mark.slow)
        one_backend = item.get_closest_marker("sqlite_only") or item.get_closest_marker("above_storage")
        (dropped if on_postgres and one_backend else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _is_property_test(item: pytest.Item) -> bool:
    function = getattr(item, "obj", None)
    return (
        bool(getattr(function, "is_hypothesis_test", False))
        or item.get_closest_marker("properties") is not None
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, db_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """The test's database as `--db` names it: a SQLite file path, or a fresh PostgreSQL database,
    dropped when the test ends (each is a 9 MB copy of the template: a run makes hundreds)."""
    if backend == "sqlite":
        yield str(db_path)
        return
    server = request.getfixturevalue("postgres")
    url = fresh_postgres_database(server)
    yield url
    name = url.rsplit("/", 1)[1]
    server.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    _created.remove(name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per session (per worker), copied for each test that opens one."""
    path = tmp_path_factory.mktemp("template") / "memvm.db"
    import anyio

    async def migrate() -> None:
        engine = await Engine.open(path)
        await engine.close()

    anyio.run(migrate)
    return path


@pytest.fixture
def migrated(db_url: str, sqlite_template: Path) -> Callable[[], str]:
    """The test's database when memvm opens it, migrated already: when the test has not made the
    SQLite file itself, a copy of the session's template (a PostgreSQL database is copied from its
    own template either way). Tests of what opening a new or missing file does use `db_url`."""

    def url() -> str:
        if backend_of(db_url) == "sqlite" and not Path(db_url).exists():
            shutil.copyfile(sqlite_template, db_url)
        return db_url

    return url


@pytest.fixture
async def open_engine(migrated: Callable[[], str], clock: ManualClock) -> AsyncIterator[EngineFactory]:
    """Open engines on the test's database file; all are closed at the end of the test.

    Always open through here: an engine left open keeps its connection threads alive, and a test
    that fails before closing one would leave the whole run hanging at exit.
    """
    opened: list[Engine] = []

    async def factory(config: EngineConfig | None = None, **fields: Any) -> Engine:
        engine = await Engine.open(migrated(), config or EngineConfig(**fields), clock=clock)
        opened.append(engine)
        return engine

    yield factory
    for engine in opened:
        await engine.close()


@pytest.fixture
async def engine(open_engine: EngineFactory) -> Engine:
    return await open_engine()


def backend_of(db_url: str | Path) -> str:
    return "postgresql" if is_postgres_url(str(db_url)) else "sqlite"


def db_rows(db_url: str | Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of `sql` (SQLite's placeholders), read from the test's database past the engine, on
    either backend: what a test checks was stored."""
    target = str(db_url)
    if backend_of(target) == "postgresql":
        import psycopg

        from tests.placeholders import bind

        text, values = bind(sql, params)
        with psycopg.connect(target, autocommit=True) as conn:
            cursor = conn.execute(text, values)  # type: ignore[arg-type]
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
    with sqlite3.connect(target) as conn:
        return conn.execute(sql, params).fetchall()


@contextmanager
def write_lock_held(db_url: str | Path) -> Iterator[None]:
    """Another program holding the database's write lock: SQLite's file lock, or on PostgreSQL the
    advisory lock every memvm write shares (taken exclusively here)."""
    target = str(db_url)
    if backend_of(target) == "postgresql":
        import psycopg
        from memvm.engine.storage.postgres_db import _LOCK_CLASS

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("BEGIN")
            conn.execute(f"SELECT pg_advisory_xact_lock({_LOCK_CLASS}, 0)")  # type: ignore[arg-type]
            try:
                yield
            finally:
                conn.execute("ROLLBACK")
        return
    locker = sqlite3.connect(target, timeout=0, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        yield
    finally:
        locker.execute("ROLLBACK")
        locker.close()


def stored_state(db_url: str | Path) -> Any:
    """Everything the database holds, to compare before and after: the file's bytes (SQLite, after
    a checkpoint), or every table's rows in order (PostgreSQL)."""
    target = str(db_url)
    if backend_of(target) == "postgresql":
        tables = [
            row[0]
            for row in db_rows(
                target, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
            )
        ]
        return {table: sorted(map(repr, db_rows(target, f"SELECT * FROM {table}"))) for table in tables}
    with sqlite3.connect(target) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return Path(target).read_bytes()


def note(content: str, **fields: Any) -> NewPage:
    return NewPage(content=content, type=fields.pop("type", PageType.NOTE), provenance="model", **fields)


def user(content: str) -> IngestMessage:
    return IngestMessage(role=Role.USER, content=content)


def assistant(content: str) -> IngestMessage:
    return IngestMessage(role=Role.ASSISTANT, content=content)


def long_text(topic: str, sentences: int = 12) -> str:
    """Realistic multi-sentence text about `topic`, long enough for the levels to differ."""
    parts = [
        f"The {topic} review started with a look at last quarter's numbers and the open questions.",
        f"Everyone agreed that the {topic} schedule slipped because two suppliers delivered late.",
        f"Maria proposed moving the {topic} launch to the second week of June to absorb the delay.",
        "The finance team asked for a revised budget that keeps the marketing spend flat.",
        f"Testing of the {topic} prototype found three defects, one of them in the power supply.",
        "The power supply defect needs a new part, which has a lead time of four weeks.",
        f"Customer interviews showed strong interest in the {topic} but worries about the price.",
        "A discount for early buyers was discussed and left for the next meeting.",
        f"Support staff will need two days of training before the {topic} goes on sale.",
        "The legal review of the warranty terms is still pending with the outside counsel.",
        f"Action items: Maria drafts the new {topic} plan, Tom orders the replacement part.",
        "The next review is set for Thursday at ten, in the large meeting room.",
    ]
    return " ".join(parts[i % len(parts)] for i in range(sentences))


# Figure lines of the reliability tests ("crash: trials=20 ... lost=0"), printed at the end of
# every run, passed or failed, where pytest would otherwise swallow a test's output. They travel
# in the test's report, so a parallel worker's figures reach the process that prints the summary.
_FIGURE = "memvm_figure"
_FIGURES: list[str] = []


@pytest.fixture
def report_figure(request: pytest.FixtureRequest) -> Callable[[str], None]:
    def report(line: str) -> None:
        request.node.user_properties.append((_FIGURE, line))

    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        _FIGURES.extend(str(value) for name, value in report.user_properties if name == _FIGURE)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _FIGURES:
        terminalreporter.write_line(line)
