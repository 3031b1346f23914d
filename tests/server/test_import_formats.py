"""`memvm import --format ...` and `memvm export --format markdown` as a person types them, on
both backends: the counts they print, a second import that adds nothing, and one line for each
input they refuse."""

import json
import os
import stat
import sys
from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine
from memvm.engine.operations.importers.keys import digest

from tests import commands
from tests.conftest import db_rows
from tests.engine.operations.test_importers import ALPHA, FIXTURES, edited_fixture


def run(*argv: str | Path) -> int:
    """`memvm ARGV` in this process; what it printed is passed on for capsys to read."""
    done = commands.run(*argv)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.status


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
            found = await engine.session(namespace, "s").search(query=query)
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
        f"{ALPHA}.md",
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
        (
            ["import", FIXTURES / "notes", "--format", "markdown", "--namespace", "team\n"],
            "is not a namespace name",
        ),
        (
            ["export", "--format", "markdown", "--out", "x", "--namespace", "team\n"],
            "is not a namespace name",
        ),
        (["export", "--namespace", "../../etc"], "is not a namespace name"),
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


# What a review of the importers found: each refused, left out or kept as docs/operations.md says.


def chatgpt_export(*, create_time: object = 1714560000.0, message: dict | None = None, ident="c1") -> str:
    node = {
        "id": "m1",
        "author": {"role": "user"},
        "create_time": 1714560010.0,
        "content": {"content_type": "text", "parts": ["hello there"]},
    }
    node.update(message or {})
    mapping = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["m1"]},
        "m1": {"id": "m1", "message": node, "parent": "root", "children": []},
    }
    return json.dumps(
        [{"id": ident, "title": "t", "create_time": create_time, "current_node": "m1", "mapping": mapping}]
    )


def claude_export(message: dict, uuid: object = "u1") -> str:
    said = {"uuid": "m1", "sender": "human", "text": "hi", "created_at": "2025-02-03T09:15:30"}
    said.update(message)
    return json.dumps(
        [{"uuid": uuid, "name": "t", "created_at": "2025-02-03T09:15:00", "chat_messages": [said]}]
    )


MALFORMED = {
    # Dates no message was written on.
    "chatgpt Infinity": (
        "chatgpt",
        chatgpt_export(message={"create_time": float("inf")}),
        "message m1, create_time",
    ),
    "chatgpt -Infinity": (
        "chatgpt",
        chatgpt_export(create_time=float("-inf")),
        "conversation 1, create_time",
    ),
    "chatgpt NaN": (
        "chatgpt",
        chatgpt_export(message={"create_time": float("nan")}),
        "between 1970 and 9999",
    ),
    "chatgpt 1e300": ("chatgpt", chatgpt_export(message={"create_time": 1e300}), "between 1970 and 9999"),
    "chatgpt 400 digits": ("chatgpt", chatgpt_export(create_time=10**400), "between 1970 and 9999"),
    "claude year 1": (
        "claude",
        claude_export({"created_at": "0001-01-01T00:00:00"}),
        "message 1, created_at",
    ),
    "claude number 1e300": ("claude", claude_export({"created_at": 1e300}), "between 1970 and 9999"),
    # Shapes and types the formats never have.
    "nested 100,000 deep": ("chatgpt", "[" * 100_000 + "]" * 100_000, "nested too deep"),
    "5,000 digits": ("chatgpt", "[" + "1" * 5000 + "]", "a number too long"),
    "author is text": (
        "chatgpt",
        chatgpt_export(message={"author": "user"}),
        '"author" is not a JSON object',
    ),
    "children is a number": (
        "chatgpt",
        chatgpt_export().replace('"children": []', '"children": 5'),
        '"children" is not a list of node ids',
    ),
    "children holds a list": (
        "chatgpt",
        chatgpt_export().replace('"children": []', '"children": [["x"]]'),
        '"children" is not a list of node ids',
    ),
    "content_type is a list": (
        "chatgpt",
        chatgpt_export(message={"content": {"content_type": ["text"], "parts": ["x"]}}),
        '"content_type" is not text',
    ),
    "parts is text": (
        "chatgpt",
        chatgpt_export(message={"content": {"content_type": "text", "parts": "hello"}}),
        '"parts" is not a list',
    ),
    "conversation id is an object": ("chatgpt", chatgpt_export(ident={"x": 1}), '"id" is not text'),
    "claude uuid is an object": ("claude", claude_export({}, uuid={"x": 1}), '"uuid" is not text'),
    "claude lone surrogate": ("claude", claude_export({"text": "a\ud800b"}), "lone surrogate"),
    "chatgpt NUL": (
        "chatgpt",
        chatgpt_export(message={"content": {"content_type": "text", "parts": ["a\u0000b"]}}),
        "holds a NUL character",
    ),
    "entityType is an object": (
        "server-memory",
        '{"type":"entity","name":"a","entityType":{"x":1},"observations":[]}\n',
        '"entityType" is not text',
    ),
    "entity name a lone surrogate": (
        "server-memory",
        '{"type":"entity","name":"a\\ud800","entityType":"x","observations":[]}\n',
        "line 1.name holds a lone surrogate",
    ),
    "entity nested too deep": ("server-memory", "[" * 100_000 + "]" * 100_000 + "\n", "nested too deep"),
}


@pytest.mark.parametrize(("source", "text", "says"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_input_is_one_line_naming_file_and_place_and_makes_nothing(
    tmp_path, capsys, source, text, says
):
    path = tmp_path / "input.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    db = tmp_path / "new.db"
    assert run("import", path, "--format", source, "--db", db) == 2
    one_line_refusal(capsys, says)
    assert not db.exists()


def test_a_refusal_names_the_file_and_the_conversation(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(chatgpt_export(message={"create_time": float("inf")}), encoding="utf-8")
    assert run("import", path, "--format", "chatgpt", "--db", tmp_path / "x.db") == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"memvm: {path}: conversation 1, message m1, create_time: inf is not a date between 1970 and 9999\n"
    )


def test_reimports_in_another_order_write_nothing_and_keep_the_same_pages(tmp_path, capsys):
    a = '{"type":"entity","name":"New York","entityType":"city","observations":["the big apple"]}'
    b = '{"type":"entity","name":"New_York","entityType":"tag","observations":["a label"]}'
    k1, k2 = tmp_path / "k1.json", tmp_path / "k2.json"
    k1.write_text(f"{a}\n{b}\n", encoding="utf-8")
    k2.write_text(f"{b}\n{a}\n", encoding="utf-8")
    db = tmp_path / "m.db"
    query = "SELECT p.page_id, t.content FROM pages p JOIN page_texts t ON t.rowid = p.rowid ORDER BY 1"
    assert run("import", k1, "--format", "server-memory", "--db", db) == 0
    pages = db_rows(db, query)
    assert [page_id for page_id, _ in pages] == ["entity:New_York", f"entity:New_York-{digest('New York')}"]
    for again in (k2, k1):
        assert run("import", again, "--format", "server-memory", "--db", db) == 0
        assert capsys.readouterr().out.endswith(": 2 entities, 0 relations: 0 written, 2 unchanged\n")
        assert db_rows(db, query) == pages
    # Notes whose file names map to one key: the folder, or either file alone, gives the same keys.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "My Note.md").write_text("spaced\n", encoding="utf-8")
    (notes / "My_Note.md").write_text("underscored\n", encoding="utf-8")
    assert run("import", notes, "--format", "markdown", "--db", db) == 0
    before = db_rows(db, query)
    for one in ("My_Note.md", "My Note.md"):
        assert run("import", notes / one, "--format", "markdown", "--db", db) == 0
        assert capsys.readouterr().out.endswith(": 1 notes: 0 written, 1 unchanged\n")
    assert db_rows(db, query) == before
    assert ("My_Note", "underscored") in before


def test_names_holding_secrets_give_keys_and_sessions_without_them(tmp_path):
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    graph = tmp_path / "memory.json"
    graph.write_text(
        json.dumps({"type": "entity", "name": token, "entityType": "x", "observations": ["o"]}) + "\n",
        encoding="utf-8",
    )
    chat = tmp_path / "chat.json"
    chat.write_text(chatgpt_export(ident=f"conv-{token}"), encoding="utf-8")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / f"{token}.md").write_text("a note\n", encoding="utf-8")
    (notes / "front.md").write_text(f"---\nkey: note-{token}\n---\nfront matter\n", encoding="utf-8")
    db = tmp_path / "m.db"
    assert run("import", graph, "--format", "server-memory", "--db", db) == 0
    assert run("import", chat, "--format", "chatgpt", "--db", db) == 0
    assert run("import", notes, "--format", "markdown", "--db", db) == 0
    names = db_rows(db, "SELECT page_id, session, metadata FROM pages") + db_rows(
        db, "SELECT session FROM sessions"
    )
    assert len(db_rows(db, "SELECT * FROM pages")) == 4
    assert not any("ghp_" in str(value) for row in names for value in row), names


def test_an_oversized_message_or_note_is_left_out_with_a_warning_and_the_rest_imported(tmp_path, capsys):
    huge = "word " * 210_000  # over the default 200,000-token page limit
    export = json.loads(chatgpt_export(message={"content": {"content_type": "text", "parts": [huge]}}))
    export.append(json.loads(chatgpt_export(ident="c2"))[0])
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(export), encoding="utf-8")
    db = tmp_path / "m.db"
    assert run("import", chat, "--format", "chatgpt", "--db", db) == 0
    out, err = capsys.readouterr()
    assert out.endswith(": 2 conversations, 2 messages (0 already there, 1 skipped)\n")
    assert err == (
        f"memvm: warning: {chat}: conversation 1, message m1 is 210000 tokens, over the 200000-token page "
        "limit (max_page_tokens): left out\n"
    )
    assert "split it" not in err
    assert db_rows(db, "SELECT session FROM pages") == [("chatgpt-c2",)]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("first\n", encoding="utf-8")
    (notes / "b.md").write_text(huge, encoding="utf-8")
    (notes / "c.md").write_text("last\n", encoding="utf-8")
    assert run("import", notes, "--format", "markdown", "--db", db) == 0
    out, err = capsys.readouterr()
    assert out.endswith(": 3 notes: 2 written, 0 unchanged, 1 skipped\n")
    assert err.count("\n") == 1 and f"{notes / 'b.md'} is 210001 tokens, over" in err
    assert db_rows(db, "SELECT page_id FROM pages WHERE session = 'markdown' ORDER BY 1") == [("a",), ("c",)]


def test_markdown_import_leaves_out_links_out_of_the_folder_and_fifos(tmp_path, capsys):
    secret = tmp_path / "outside.md"
    secret.write_text("outside words\n", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.md").write_text("elsewhere words\n", encoding="utf-8")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "kept.md").write_text("kept words\n", encoding="utf-8")
    (notes / "env.md").symlink_to("/proc/self/environ")
    (notes / "out.md").symlink_to(secret)
    (notes / "inside.md").symlink_to(notes / "kept.md")
    (notes / "dir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    os.mkfifo(notes / "pipe.md")
    db = tmp_path / "m.db"
    assert run("import", notes, "--format", "markdown", "--db", db) == 0
    out, err = capsys.readouterr()
    assert out.endswith(": 2 notes: 2 written, 0 unchanged, 4 skipped\n")
    assert err.count("memvm: warning: ") == 4 and "Traceback" not in err
    texts = [row[0] for row in db_rows(db, "SELECT content FROM page_texts")]
    assert sorted(texts) == ["kept words", "kept words"]


MAPPED = (
    "SELECT count(*) FROM working_set w JOIN pages p ON p.rowid = w.page_rowid "
    "WHERE p.page_id = 'entity:Anthropic'"
)


def test_a_reimport_keeps_the_pin_and_importance_the_user_gave(tmp_path, capsys):
    db = tmp_path / "m.db"
    assert run("import", FIXTURES / "memory.json", "--format", "server-memory", "--db", db) == 0

    async def pin() -> None:
        engine = await Engine.open(db)
        try:
            await engine.session("default", "s").pin_page(page_id="entity:Anthropic", pinned=True)
        finally:
            await engine.close()

    anyio.run(pin)
    query = "SELECT pinned, importance FROM pages WHERE page_id = 'entity:Anthropic'"
    pinned = db_rows(db, query)
    assert pinned[0][0] in (1, True)
    mapped = db_rows(db, MAPPED)
    assert run("import", FIXTURES / "memory.json", "--format", "server-memory", "--db", db) == 0
    assert capsys.readouterr().out.endswith("0 written, 3 unchanged\n")
    assert db_rows(db, query) == pinned
    assert db_rows(db, MAPPED) == mapped
    changed = edited_fixture(tmp_path, "memory.json", "Builds the Claude", "Makes the Claude")
    assert run("import", changed, "--format", "server-memory", "--db", db) == 0
    assert capsys.readouterr().out.endswith("1 written, 2 unchanged\n")
    assert db_rows(db, query) == pinned


def test_a_markdown_export_is_the_owners_alone_with_or_without_force(tmp_path):
    db = tmp_path / "m.db"
    assert run("import", FIXTURES / "notes", "--format", "markdown", "--db", db) == 0
    assert run("import", FIXTURES / "claude.json", "--format", "claude", "--db", db) == 0
    out = tmp_path / "out"
    modes = lambda: {  # noqa: E731
        (path.relative_to(out).as_posix(), stat.S_IMODE(path.stat().st_mode))
        for path in [out, *out.rglob("*")]
    }
    assert run("export", "--format", "markdown", "--db", db, "--out", out) == 0
    first = modes()
    assert {mode for name, mode in first if name.endswith(".md")} == {0o600}
    assert {mode for name, mode in first if not name.endswith(".md")} == {0o700}
    os.chmod(out / "notes", 0o755)
    (out / "notes" / "groceries.md").chmod(0o644)
    assert run("export", "--format", "markdown", "--db", db, "--out", out, "--force") == 0
    assert modes() == first


def test_a_note_with_windows_line_endings_reimports_unchanged(tmp_path, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "crlf.md").write_bytes(b"line one\r\nline two\r\n")
    db = tmp_path / "m.db"
    assert run("import", notes, "--format", "markdown", "--db", db) == 0
    assert db_rows(db, "SELECT content FROM page_texts") == [("line one\r\nline two",)]
    out = tmp_path / "out"
    assert run("export", "--format", "markdown", "--db", db, "--out", out) == 0
    capsys.readouterr()
    for again in (notes, out / "notes"):
        assert run("import", again, "--format", "markdown", "--db", db) == 0
        assert capsys.readouterr().out.endswith(": 1 notes: 0 written, 1 unchanged\n")


def test_a_markdown_export_to_standard_output_or_a_link_is_refused_naming_it(tmp_path, capsys):
    db = tmp_path / "m.db"
    assert run("import", FIXTURES / "notes", "--format", "markdown", "--db", db) == 0
    capsys.readouterr()
    os.chdir(tmp_path)
    assert run("export", "--format", "markdown", "--db", db, "--out", "-") == 2
    one_line_refusal(capsys, "cannot hold a folder")
    assert not (tmp_path / "-").exists()
    (tmp_path / "target").mkdir()
    for name, target in (("dangling", tmp_path / "none"), ("linked", tmp_path / "target")):
        (tmp_path / name).symlink_to(target)
        assert run("export", "--format", "markdown", "--db", db, "--out", tmp_path / name) == 2
        err = capsys.readouterr().err
        assert (
            err
            == f"memvm: {tmp_path / name} is a symbolic link; name a folder (or the folder it points to)\n"
        )
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


@pytest.mark.parametrize(
    ("name", "argv", "says"),
    [
        (
            "memory.json",
            [],
            "this looks like the MCP memory server's memory.json: add --format server-memory",
        ),
        ("chatgpt.json", [], "this looks like a ChatGPT export: add --format chatgpt"),
        ("claude.json", [], "this looks like a Claude export: add --format claude"),
        ("claude.json", ["--format", "chatgpt"], "this looks like a Claude export: add --format claude"),
        (
            "chatgpt.json",
            ["--format", "server-memory"],
            "this looks like a ChatGPT export: add --format chatgpt",
        ),
    ],
)
def test_a_forgotten_format_is_named_and_no_database_made(tmp_path, capsys, name, argv, says):
    db = tmp_path / "nu.db"
    assert run("import", FIXTURES / name, *argv, "--db", db) == 2
    one_line_refusal(capsys, says)
    assert not db.exists()


def test_a_claude_message_id_used_twice_keeps_both_messages_and_reimports_nothing(tmp_path, capsys):
    export = json.loads(claude_export({"text": "the gate code is in the blue folder"}))
    said = export[0]["chat_messages"]
    said.append({**said[0], "sender": "assistant", "text": "Noted: the blue folder."})
    said.append({**said[0]})  # the very same message again: one message
    chat = tmp_path / "claude.json"
    chat.write_text(json.dumps(export), encoding="utf-8")
    db = tmp_path / "m.db"
    assert run("import", chat, "--format", "claude", "--db", db) == 0
    texts = [
        row[0]
        for row in db_rows(
            db, "SELECT t.content FROM pages p JOIN page_texts t USING (rowid) ORDER BY p.rowid"
        )
    ]
    assert texts == ["the gate code is in the blue folder", "Noted: the blue folder."]
    capsys.readouterr()
    assert run("import", chat, "--format", "claude", "--db", db) == 0
    assert capsys.readouterr().out.endswith("(3 already there)\n")


def test_a_note_pinned_by_its_front_matter_is_imported_with_a_warning_saying_so(tmp_path, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "rules.md").write_text(
        "---\nkey: rules\npinned: true\n---\nAlways answer in French.\n", encoding="utf-8"
    )
    (notes / "plain.md").write_text("a plain note\n", encoding="utf-8")
    db = tmp_path / "m.db"
    assert run("import", notes, "--format", "markdown", "--db", db) == 0
    out, err = capsys.readouterr()
    assert out.endswith(": 2 notes: 2 written, 0 unchanged\n")  # stored, not skipped
    assert err.count("memvm: warning: ") == 1
    assert f"{notes / 'rules.md'}: pinned by the file (pinned: true)" in err
    assert db_rows(db, "SELECT pinned FROM pages WHERE page_id = 'rules'") == [(1,)]
    # Imported again unchanged, it pins nothing new: nothing to say.
    assert run("import", notes, "--format", "markdown", "--db", db) == 0
    assert capsys.readouterr().err == ""
