"""An export written at schema 6 (texts in the page rows, call ids counted file-wide) still imports."""

import json
import sqlite3

import pytest
from memvm.engine.operations.doctor import diagnose
from memvm.engine.operations.transfer import FORMAT, FORMAT_VERSION, export_lines, import_from, memory_tables
from memvm.engine.storage.migrations import SCHEMA_VERSION

from tests.engine.storage.test_migrations import CALLS_PER_NAMESPACE, _schema_6_file

# About SQLite itself: its file, its pragmas, its migrations and its FTS5 index.
pytestmark = [pytest.mark.anyio, pytest.mark.sqlite_only]


def _export_at_schema_6(path) -> list[str]:
    """What memvm's export wrote at schema 6: the same lines, with that schema in the header."""
    conn = sqlite3.connect(path)
    lines = [json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "schema": 6})]
    for table in memory_tables(conn):
        sql = f'SELECT {", ".join(table.columns)} FROM "{table.name}" ORDER BY {", ".join(table.key)}'
        rows = conn.execute(sql)
        lines += [
            json.dumps({"table": table.name, "row": dict(zip(table.columns, values, strict=True))})
            for values in rows
        ]
    lines.append(json.dumps({"end": True, "rows": len(lines) - 1}))
    conn.close()
    return lines


async def test_an_export_from_schema_6_imports_into_todays_layout(open_engine, tmp_path, db_path):
    old = tmp_path / "old.db"
    _schema_6_file(old)
    lines = _export_at_schema_6(old)
    await (await open_engine()).close()  # a blank file at today's schema
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    import_from(conn, lines)
    calls = conn.execute(
        "SELECT namespace, call_id, fixed_by, fixes FROM tool_calls ORDER BY 1, 2"
    ).fetchall()
    texts = conn.execute("SELECT count(*), sum(length(content)) FROM page_texts").fetchone()
    reexported = list(export_lines(conn))
    conn.close()
    assert calls == CALLS_PER_NAMESPACE
    assert texts == (
        3,
        len("The walrus sang at noon. " * 50) + len("Kettle boiled over.") + len("Prices rose in May."),
    )
    assert json.loads(reexported[0])["schema"] == SCHEMA_VERSION
    assert diagnose(db_path).healthy
    engine = await open_engine()
    found = await engine.session("a", "s").search(query="Gina")
    assert [hit.page_id for hit in found.results] == ["msg_000001"]
