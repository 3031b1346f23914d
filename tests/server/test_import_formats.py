"""`memvm import --format ...` and `memvm export --format markdown` as a person types them, on
both backends: the counts they print, a second import that adds nothing, and one line for each
input they refuse."""

from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine

from tests.conftest import db_rows
from tests.engine.operations.test_importers import FIXTURES
from tests.server.test_operations import run

FORMATS = [
    ("server-memory", "memory.json", "3 entities, 2 relations: 3 written, 0 unchanged"),
    ("chatgpt", "chatgpt.json", "2 conversations, 5 messages (0 already there)"),
    ("claude", "claude.json", "2 conversations, 4 messages (0 already there)"),
    ("markdown", "notes", "3 notes: 3 written, 0 unchanged"),
]
AGAIN = {
    "server-memory": "3 entities, 2 relations: 0 written, 3 unchanged",
    "chatgpt": "2 conversations, 5 messages (5 already there)",
    "claude": "2 conversations, 4 messages (4 already there)",
    "markdown": "3 notes: 0 written, 3 unchanged",
}


def search(db: str, namespace: str, query: str) -> list[str]:
    async def go() -> list[str]:
        engine = await Engine.open(db)
        try:
            found = await engine.search(namespace=namespace, session="s", query=query)
        finally:
            await engine.close()
        return [result.page_id for result in found.results]

    return anyio.run(go)


@pytest.mark.parametrize(("source", "name", "says"), FORMATS)
def test_each_format_imports_with_its_counts_and_twice_adds_nothing(db_url, capsys, source, name, says):
    assert run("import", FIXTURES / name, "--format", source, "--db", db_url) == 0
    assert capsys.readouterr().out.endswith(f": {says}\n")
    pages = db_rows(db_url, "SELECT count(*) FROM pages")
    assert run("import", FIXTURES / name, "--format", source, "--db", db_url) == 0
    assert capsys.readouterr().out.endswith(f": {AGAIN[source]}\n")
    assert db_rows(db_url, "SELECT count(*) FROM pages") == pages


def test_imports_join_the_namespace_named_and_add_to_memory_already_there(db_url, capsys):
    assert run("import", FIXTURES / "claude.json", "--format", "claude", "--db", db_url) == 0
    assert (
        run(
            "import",
            FIXTURES / "memory.json",
            "--format",
            "server-memory",
            "--db",
            db_url,
            "--namespace",
            "work",
        )
        == 0
    )
    assert search(db_url, "work", "fluent Spanish") == ["entity:John_Smith"]
    assert search(db_url, "default", "fluent Spanish") == []
    assert search(db_url, "default", "greenhouse tomatoes brown rings")[:1] != []


def test_secrets_in_an_imported_conversation_are_redacted(db_url):
    assert run("import", FIXTURES / "chatgpt.json", "--format", "chatgpt", "--db", db_url) == 0
    texts = [row[0] for row in db_rows(db_url, "SELECT content FROM page_texts")]
    assert any("[REDACTED:anthropic_key]" in text for text in texts)
    assert not any("sk-ant-api03" in text for text in texts)


def test_markdown_export_and_import_round_trip_through_the_command(db_url, tmp_path, capsys):
    assert run("import", FIXTURES / "notes", "--format", "markdown", "--db", db_url) == 0
    assert run("import", FIXTURES / "chatgpt.json", "--format", "chatgpt", "--db", db_url) == 0
    out = tmp_path / "export"
    capsys.readouterr()
    assert run("export", "--format", "markdown", "--db", db_url, "--out", out) == 0
    assert (
        capsys.readouterr().out
        == f"exported 2 sessions (5 pages) and 3 notes of namespace default to {out}\n"
    )
    assert sorted(p.name for p in (out / "notes").iterdir()) == [
        "groceries.md",
        "prefs.seating.md",
        "projects.alpha_plan.md",
    ]
    copy = tmp_path / "copy.db"
    assert run("import", out / "notes", "--format", "markdown", "--db", copy) == 0
    query = "SELECT p.page_id, p.type, p.pinned, t.content FROM pages p JOIN page_texts t ON t.rowid = p.rowid WHERE p.type != 'transcript' ORDER BY p.page_id"
    assert db_rows(copy, query) == db_rows(db_url, query)
    # The folder now holds files: a second export is refused unless forced.
    assert run("export", "--format", "markdown", "--db", db_url, "--out", out) == 2
    assert "is not empty" in capsys.readouterr().err
    assert run("export", "--format", "markdown", "--db", db_url, "--out", out, "--force") == 0


def one_line_refusal(capsys, says: str) -> None:
    err = capsys.readouterr().err
    assert err.startswith("memvm: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert says in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["import", FIXTURES / "claude.json", "--format", "chatgpt"],
            'has no "mapping" of messages: not a ChatGPT export',
        ),
        (["import", FIXTURES / "chatgpt.json", "--format", "server-memory"], "line 1 is not JSON"),
        (["import", FIXTURES / "memory.json", "--format", "claude"], "not JSON at line 2"),
        (["import", FIXTURES / "missing.json", "--format", "claude"], "there is no file at"),
        (["import", FIXTURES / "missing", "--format", "markdown"], "there is no folder or file at"),
        (["import", "-", "--format", "chatgpt"], "reads a file or folder"),
        (
            ["import", FIXTURES / "memory.json", "--namespace", "work"],
            "--namespace is for the other import formats",
        ),
        (["export", "--format", "markdown"], "name it with --out DIR"),
        (
            ["import", FIXTURES / "notes", "--format", "markdown", "--namespace", "my team"],
            "is not a namespace name",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(db_url, capsys, argv, says):
    before = db_rows(db_url, "SELECT count(*) FROM pages") if not db_url.endswith(".db") else None
    assert run(*argv, "--db", db_url) == 2
    one_line_refusal(capsys, says)
    if before is None:
        assert not Path(db_url).exists()  # not even an empty database was created
    else:
        assert db_rows(db_url, "SELECT count(*) FROM pages") == before


def test_markdown_export_of_a_missing_database_is_refused(tmp_path, capsys):
    assert run("export", "--format", "markdown", "--db", tmp_path / "none.db", "--out", tmp_path / "out") == 2
    one_line_refusal(capsys, "there is no database at")
    assert not (tmp_path / "out").exists()
