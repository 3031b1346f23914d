"""One schema, two dialects: a new SQLite file and a new PostgreSQL database, each migrated by
this memvm, hold the same tables and views, the same columns with the same types (through the map
of SQLite's types to PostgreSQL's) and nullability, the same primary keys and the same named
indexes. What differs is listed here with its reason: the full-text index, which each backend
builds its own way (FTS5 against page_terms)."""

import sqlite3

import psycopg
import pytest
from memvm.engine import Engine
from memvm.engine.storage import sqlite_moment

from tests.conftest import fresh_postgres_database

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# SQLite's declared types, as PostgreSQL's are named (integers are 64-bit on both).
TYPES = {"INTEGER": "bigint", "REAL": "double precision", "TEXT": "text", "BLOB": "bytea", "": "any"}

# The full-text index: FTS5's virtual table, its shadow tables and its vocabulary on SQLite; on
# PostgreSQL each page's stems, with their index.
SQLITE_ONLY = {
    "pages_fts",
    "pages_fts_config",
    "pages_fts_data",
    "pages_fts_docsize",
    "pages_fts_idx",
    "pages_terms",
}
POSTGRES_ONLY = {"page_terms"}
POSTGRES_ONLY_INDEXES = {"page_terms_by_page"}
# PostgreSQL's view of searched text also names each page's namespace: the engine writes the
# stems of page_terms with it, where FTS5 reads the view by rowid alone.
POSTGRES_ONLY_COLUMNS = {("page_search", "namespace")}

Column = tuple[str, str, str, bool]  # table, column, type, NOT NULL


def sqlite_schema(path: str) -> tuple[set[Column], set[tuple[str, tuple[str, ...]]], set[str]]:
    with sqlite3.connect(path) as conn:
        # What each engine connection answers for its transaction's moment (sqlite_moment).
        conn.create_function(sqlite_moment.FUNCTION, 0, lambda: 0.0)
        relations = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
            )
            if name not in SQLITE_ONLY
        ]
        columns, keys = set(), set()
        for relation in relations:
            info = conn.execute(f"PRAGMA table_xinfo({relation})").fetchall()
            for _, name, declared, notnull, _, pk, _ in info:
                kind = TYPES[declared.upper()]
                # A view's columns have no declared type or constraint in SQLite: types are compared
                # on tables, names on views.
                columns.add((relation, name, kind, bool(notnull) or pk > 0))
            primary = tuple(name for _, name, *_, pk, _ in sorted(info, key=lambda row: row[5]) if pk)
            if primary:
                keys.add((relation, primary))
        indexes = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL"
            )
        }
    return columns, keys, indexes


def postgres_schema(url: str) -> tuple[set[Column], set[tuple[str, tuple[str, ...]]], set[str]]:
    with psycopg.connect(url) as conn:
        columns = {
            (table, name, kind, nullable == "NO")
            for table, name, kind, nullable in conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
                "WHERE table_schema = current_schema()"
            )
            if table not in POSTGRES_ONLY and (table, name) not in POSTGRES_ONLY_COLUMNS
        }
        keys = {
            (table, tuple(names))
            for table, names in conn.execute(
                "SELECT c.conrelid::regclass::text, array_agg(a.attname ORDER BY k.n) "
                "FROM pg_constraint c CROSS JOIN unnest(c.conkey) WITH ORDINALITY AS k(attnum, n) "
                "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
                "WHERE c.contype = 'p' AND c.connamespace = current_schema()::regnamespace "
                "GROUP BY c.conrelid, c.conname"
            )
            if table not in POSTGRES_ONLY
        }
        # Named indexes only: those behind a primary key or UNIQUE constraint are SQLite's
        # autoindexes, compared as keys above.
        indexes = {
            name
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes i WHERE schemaname = current_schema() AND NOT EXISTS "
                "(SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)"
            )
        } - POSTGRES_ONLY_INDEXES
    return columns, keys, indexes


def views_untyped(columns: set[Column], views: set[str]) -> set[Column]:
    return {
        (t, name, "any", False) if t in views else (t, name, kind, notnull)
        for t, name, kind, notnull in columns
    }


async def test_a_new_sqlite_file_and_a_new_postgresql_database_have_one_schema(tmp_path, postgres):
    path, url = str(tmp_path / "memvm.db"), fresh_postgres_database(postgres)
    for target in (path, url):
        await (await Engine.open(target)).close()
    on_sqlite, on_postgres = sqlite_schema(path), postgres_schema(url)
    with sqlite3.connect(path) as conn:
        views = {name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'view'")}
    sqlite_columns, postgres_columns = (
        views_untyped(on_sqlite[0], views),
        views_untyped(on_postgres[0], views),
    )
    assert sorted(sqlite_columns - postgres_columns) == sorted(postgres_columns - sqlite_columns) == []
    # Views have no primary key; PostgreSQL's ledger is created by the same statement as SQLite's.
    assert on_sqlite[1] == on_postgres[1]
    assert on_sqlite[2] == on_postgres[2]
