"""An export written at schema 6 (texts in the page rows, call ids counted file-wide) still imports."""

import json

import pytest
from memvm.engine.operations.doctor import diagnose
from memvm.engine.operations.tables import memory_tables
from memvm.engine.operations.transfer import FORMAT, FORMAT_VERSION, import_from, rows_sql
from memvm.engine.storage.migrations import SCHEMA_VERSION
from memvm.engine.storage.open import opened_database

from tests.engine.storage.test_migrations import CALLS_PER_NAMESPACE, _schema_6_file
from tests.stored import export_of

# About SQLite itself: its file, its pragmas, its migrations and its FTS5 index.
pytestmark = [pytest.mark.anyio, pytest.mark.sqlite_only]


async def _export_at_schema_6(path) -> list[str]:
    """What memvm's export wrote at schema 6: the same lines, with that schema in the header."""
    lines = [json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "schema": 6})]
    async with opened_database(path, inspect=True) as db, db.read(None) as conn:
        for table in await memory_tables(conn):
            lines += [
                json.dumps({"table": table.name, "row": dict(zip(table.columns, values, strict=True))})
                for values in await conn.all(rows_sql(table, None)[0])
            ]
    lines.append(json.dumps({"end": True, "rows": len(lines) - 1}))
    return lines


async def _lines(lines: list[str]):
    for line in lines:
        yield line


async def test_an_export_from_schema_6_imports_into_todays_layout(open_engine, tmp_path, db_path):
    old = tmp_path / "old.db"
    _schema_6_file(old)
    lines = await _export_at_schema_6(old)
    engine = await open_engine()  # a blank file at today's schema
    async with engine.db.write() as conn:
        await import_from(conn, _lines(lines))
    async with engine.db.read(None) as conn:
        calls = [
            tuple(row)
            for row in await conn.all(
                "SELECT namespace, call_id, fixed_by, fixes FROM tool_calls ORDER BY 1, 2"
            )
        ]
        texts = tuple(await conn.one("SELECT count(*), sum(length(content)) FROM page_texts"))  # type: ignore[arg-type]
    reexported = await export_of(db_path)
    assert calls == CALLS_PER_NAMESPACE
    assert texts == (
        3,
        len("The walrus sang at noon. " * 50) + len("Kettle boiled over.") + len("Prices rose in May."),
    )
    assert json.loads(reexported[0])["schema"] == SCHEMA_VERSION
    assert (await diagnose(engine.db)).healthy
    found = await engine.session("a", "s").search(query="Gina")
    assert [hit.page_id for hit in found.results] == ["msg_000001"]
