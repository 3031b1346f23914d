"""Every statement the product holds compiles on every backend it runs on: each registered
statement and template (engine/storage/statements.py), and each module-level SQL string of memvm's
packages (one that takes no parameters, run as written), is prepared (not run) on a migrated SQLite
file and, in the end-to-end stage, on a migrated PostgreSQL database, as the engine compiles it. A
statement that only a rare path runs cannot then first fail on a user's PostgreSQL.

Statements are found by walking the packages, so a new one is checked without being listed. A
module-level string that takes a parameter fails the walk: it must be registered. A registered
template is filled with its examples.
"""

import importlib
import pkgutil
import re
import sqlite3

import psycopg
import pytest
from memvm.engine import Engine
from memvm.engine.storage import sqlite_moment
from memvm.engine.storage.statements import REGISTRY, Statement, Template, Untranslatable, compile_sql

from tests.conftest import fresh_postgres_database

pytestmark = pytest.mark.anyio

PACKAGES = ("memvm.engine", "memvm.resources", "memvm.server", "memvm.hooks", "memvm.ui")
STATEMENT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.IGNORECASE)


def statements() -> dict[str, str]:
    """Every module-level SQL string, by `module.NAME`: text the engine runs as written."""
    found = {}
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for module_info in pkgutil.walk_packages(package.__path__, package_name + "."):
            if module_info.name.endswith("__main__"):
                continue
            module = importlib.import_module(module_info.name)
            for name, value in vars(module).items():
                if isinstance(value, str) and STATEMENT.match(value):
                    found[f"{module_info.name}.{name}"] = value
    return found


def on_backend(backend: str) -> dict[str, str]:
    """The statements `backend` runs: modules of one backend hold that backend's only."""
    other = "postgres" if backend == "sqlite" else "sqlite"
    return {name: sql for name, sql in statements().items() if other not in name.rsplit(".", 2)[-2]}


def registered() -> dict[str, Statement]:
    """Every registered statement, and every template filled as its examples say (statements.py);
    the packages are imported by the walk, which registers them."""
    statements()
    return {
        name: made.fill(**made.examples) if isinstance(made, Template) else made
        for name, made in REGISTRY.items()
    }


def test_a_statement_that_takes_parameters_is_registered():
    """Text runs as written (storage/api.py): a module-level statement with a `?`, or a `{slot}`
    filled when run, would have to be a registered statement or template."""
    unregistered = [name for name, sql in statements().items() if "{" in sql or _takes_parameters(sql)]
    assert unregistered == []


def _takes_parameters(sql: str) -> bool:
    try:
        return bool(compile_sql(sql).params)
    except Untranslatable:
        return True


def test_the_walk_finds_the_statements():
    found, named = statements(), registered()
    assert len(found) + len(named) > 150
    assert "outcomes.insert call" in named
    assert "sessions.touch" in named


def test_a_statement_is_refused_when_it_holds_what_cannot_be_compiled():
    for sql in (
        "SELECT 1 /* a block comment */",
        "SELECT $$dollar$$",
        "SELECT E'escaped'",
        "SELECT metadata ? 'key' FROM pages",
        "SELECT * FROM pages WHERE rowid = ?",
        "SELECT 'unterminated",
    ):
        with pytest.raises(Untranslatable):
            compile_sql(sql)
    compiled = compile_sql("SELECT x::text, '50%: a :b', :a + :a FROM t -- :c")
    assert compiled.params == {"a"}
    assert compiled.texts["postgresql"] == "SELECT x::text, '50%%: a :b', %(a)s + %(a)s FROM t -- :c"
    assert compiled.texts["sqlite"] == "SELECT x::text, '50%: a :b', :a + :a FROM t -- :c"


async def test_every_statement_compiles_on_sqlite(tmp_path):
    path = tmp_path / "memvm.db"
    await (await Engine.open(path)).close()
    failed = {}
    with sqlite3.connect(path) as conn:
        # What each engine connection answers for its transaction's moment (sqlite_moment).
        conn.create_function(sqlite_moment.FUNCTION, 0, lambda: 0.0)
        for name, sql in on_backend("sqlite").items():
            try:
                conn.execute(f"EXPLAIN {sql}")
            except sqlite3.Error as exc:
                failed[name] = str(exc)
        for name, made in registered().items():
            if made.backend not in (None, "sqlite"):
                continue
            try:
                conn.execute(f"EXPLAIN {made.texts['sqlite']}", dict.fromkeys(made.params))
            except sqlite3.Error as exc:
                failed[name] = str(exc)
    assert failed == {}


def numbered_parameters(made: Statement) -> str:
    """A statement's PostgreSQL text with $1, $2… for its named parameters, as PREPARE takes it."""
    order = sorted(made.params)
    text = re.sub(r"%\((\w+)\)s", lambda m: f"${order.index(m.group(1)) + 1}", made.texts["postgresql"])
    return text.replace("%%", "%")


@pytest.mark.slow
async def test_every_statement_compiles_on_postgresql(postgres):
    url = fresh_postgres_database(postgres)
    await (await Engine.open(url)).close()
    failed = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for name, sql in on_backend("postgresql").items():
            try:
                conn.execute(f"PREPARE checked AS {sql}")  # type: ignore[arg-type]
                conn.execute("DEALLOCATE checked")
            except psycopg.Error as exc:
                failed[name] = str(exc).splitlines()[0]
        for name, made in registered().items():
            if made.backend not in (None, "postgresql"):
                continue
            numbered = numbered_parameters(made)
            try:
                conn.execute(f"PREPARE checked AS {numbered}")  # type: ignore[arg-type]
                conn.execute("DEALLOCATE checked")
            except psycopg.Error as exc:
                failed[name] = str(exc).splitlines()[0]
    assert failed == {}
