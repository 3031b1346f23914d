"""Imports from other tools' files, through the engine on both backends: what each format becomes,
that a second import adds nothing, and that a markdown export reads back as the same notes.

The fixtures under tests/fixtures/imports are small files written in each documented format.
"""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from memvm.engine import EngineConfig
from memvm.engine.errors import PageNotFound
from memvm.engine.models.pages import Level, PageType, Role
from memvm.engine.operations.importers.formats import read_source
from memvm.engine.operations.importers.keys import KEY_CHARS, digest, name_for
from memvm.engine.operations.markdown_export import export_markdown
from memvm.engine.operations.transfer import TransferError

from tests.conftest import NS, db_rows, note

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"
CHATGPT_SESSION = "chatgpt-6a1f0c2e-0000-4000-8000-000000000001"
CLAUDE_SESSION = "claude-0b9d5b8e-1111-4222-8333-444455556666"
# A name that is not a key as it is gains a digest of itself.
LISBON = f"entity:Lisbon_trip_2025-{digest('Lisbon trip 2025')}"
ALPHA = f"projects.alpha_plan-{digest('projects.alpha plan')}"


async def run_import(engine, source: str, path: Path, namespace: str = NS):
    return await read_source(source, path)(engine, namespace)


def transcript(db_url, session: str) -> list[tuple]:
    return db_rows(
        db_url,
        "SELECT p.role, p.created_at, t.content FROM pages p JOIN page_texts t ON t.rowid = p.rowid "
        "WHERE p.session = ? ORDER BY p.created_at, p.rowid",
        (session,),
    )


def edited_fixture(folder: Path, name: str, old: str, new: str) -> Path:
    """A copy of the fixture `name` in `folder`, with `old` replaced by `new`."""
    edited = folder / name
    edited.write_text((FIXTURES / name).read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return edited


def iso(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# server-memory


async def test_entities_become_notes_that_search_finds_with_their_relations(engine):
    counts = await run_import(engine, "server-memory", FIXTURES / "memory.json")
    assert counts.summary() == "3 entities, 2 relations: 3 written, 0 unchanged"
    found = await engine.session(NS, "s").search(query="fluent Spanish")
    assert found.results[0].page_id == "entity:John_Smith"
    john = await engine.namespace(NS).get_page(page_id="entity:John_Smith")
    assert john.type is PageType.NOTE
    assert john.content(Level.FULL).splitlines() == [
        "John_Smith (person)",
        "- Speaks fluent Spanish",
        "- Graduated in 2019",
        "- Prefers morning meetings",
        "- John_Smith works_at Anthropic",
        "- John_Smith attends Lisbon trip 2025",
    ]
    # The other end of a relation says it too, and a name with spaces gets a key of the pattern.
    trip = await engine.namespace(NS).get_page(page_id=LISBON)
    assert "John_Smith attends Lisbon trip 2025" in trip.content(Level.FULL)
    found = await engine.session(NS, "s").search(query="who works at Anthropic")
    assert {r.page_id for r in found.results} >= {"entity:John_Smith", "entity:Anthropic"}


async def test_a_second_graph_import_changes_nothing_and_a_changed_entity_is_rewritten(
    engine, db_url, tmp_path
):
    await run_import(engine, "server-memory", FIXTURES / "memory.json")
    before = db_rows(db_url, "SELECT rowid, page_id, last_access FROM pages ORDER BY rowid")
    again = await run_import(engine, "server-memory", FIXTURES / "memory.json")
    assert (again.written, again.unchanged) == (0, 3)
    assert db_rows(db_url, "SELECT rowid, page_id, last_access FROM pages ORDER BY rowid") == before
    grown = edited_fixture(
        tmp_path, "memory.json", '"Hotel near Alfama"', '"Hotel near Alfama", "Dinner at 9"'
    )
    changed = await run_import(engine, "server-memory", grown)
    assert (changed.written, changed.unchanged) == (1, 2)
    trip = await engine.namespace(NS).get_page(page_id=LISBON)
    assert trip.content(Level.FULL).endswith("- Dinner at 9\n- John_Smith attends Lisbon trip 2025")
    # What the entity said before is its superseded version, not a page search could return.
    assert trip.version == 2 and "Dinner at 9" not in trip.versions[0].content


# chatgpt


async def test_a_chatgpt_conversation_becomes_a_session_of_its_current_thread(engine, db_url):
    counts = await run_import(engine, "chatgpt", FIXTURES / "chatgpt.json")
    assert counts.summary() == "2 conversations, 5 messages (0 already there)"
    rows = transcript(db_url, CHATGPT_SESSION)
    # The edited-away answer, the hidden system message, the tool's output and the image are not
    # conversation; each message keeps its role and its own date.
    assert [(role, at) for role, at, _ in rows] == [
        ("user", 1714560010.5),
        ("assistant", 1714560030.0),
        ("user", 1714560100.0),
        ("assistant", 1714560160.0),
    ]
    assert rows[2][2] == "Here is a photo of the jar. My key is [REDACTED:anthropic_key], ignore it."
    assert not any("kombucha" in text or "tool output" in text for _, _, text in rows)
    # A message without a date has its conversation's.
    assert [at for _, at, _ in transcript(db_url, "chatgpt-6a1f0c2e-0000-4000-8000-000000000002")] == [
        1714600000.0
    ]
    found = await engine.session(NS, "s").search(query="starter smells like acetone")
    assert found.results[0].role is Role.USER and found.results[0].session == CHATGPT_SESSION
    assert (await engine.session(NS, CHATGPT_SESSION).working_set()).entries == []


async def test_a_second_chatgpt_import_adds_nothing_and_a_grown_one_adds_its_new_message(
    engine, db_url, tmp_path
):
    await run_import(engine, "chatgpt", FIXTURES / "chatgpt.json")
    again = await run_import(engine, "chatgpt", FIXTURES / "chatgpt.json")
    assert again.summary() == "2 conversations, 5 messages (5 already there)"
    export = json.loads((FIXTURES / "chatgpt.json").read_text(encoding="utf-8"))
    mapping = export[0]["mapping"]
    mapping["n5"]["children"] = ["n6"]
    mapping["n6"] = {
        "id": "n6",
        "parent": "n5",
        "children": [],
        "message": {
            "id": "n6",
            "author": {"role": "user"},
            "create_time": 1714650000.0,
            "content": {"content_type": "text", "parts": ["Day three: it doubled in four hours!"]},
        },
    }
    export[0]["current_node"] = "n6"
    grown = tmp_path / "conversations.json"
    grown.write_text(json.dumps(export), encoding="utf-8")
    counts = await run_import(engine, "chatgpt", grown)
    assert counts.summary() == "2 conversations, 6 messages (5 already there)"
    rows = transcript(db_url, CHATGPT_SESSION)
    assert len(rows) == 5 and rows[-1] == ("user", 1714650000.0, "Day three: it doubled in four hours!")


# claude


async def test_a_claude_conversation_keeps_its_text_blocks_roles_and_dates(engine, db_url):
    counts = await run_import(engine, "claude", FIXTURES / "claude.json")
    assert counts.summary() == "2 conversations, 4 messages (0 already there)"
    rows = transcript(db_url, CLAUDE_SESSION)
    assert rows == [
        (
            "user",
            iso("2025-02-03T09:15:30"),
            "The lower leaves of my greenhouse tomatoes have brown rings. What is it?",
        ),
        (
            "assistant",
            iso("2025-02-03T09:16:10"),
            "Brown concentric rings on lower leaves point to early blight (Alternaria).\n\n"
            "Remove the affected leaves and water at the base.",
        ),
    ]
    # An older message with `text` alone is read; one without a date has the one before's.
    older = transcript(db_url, "claude-0b9d5b8e-1111-4222-8333-777788889999")
    assert older == [
        ("user", iso("2025-03-10T18:00:05"), "Translate 'good evening' into Portuguese."),
        ("assistant", iso("2025-03-10T18:00:05"), "Boa noite."),
    ]
    found = await engine.session(NS, "s").search(query="early blight tomatoes")
    assert found.results[0].session == CLAUDE_SESSION
    again = await run_import(engine, "claude", FIXTURES / "claude.json")
    assert again.summary() == "2 conversations, 4 messages (4 already there)"


async def test_a_claude_message_keeps_the_text_extracted_from_its_attached_files(engine, db_url, tmp_path):
    export = tmp_path / "conversations.json"
    message = {
        "uuid": "m-1",
        "sender": "human",
        "text": "What does this say about the budget?",
        "created_at": "2025-04-01T08:00:00Z",
        "attachments": [
            {
                "file_name": "budget.txt",
                "file_type": "txt",
                "extracted_content": "Q3 travel budget: 4,200 EUR",
            },
            {"file_name": "scan.pdf", "file_type": "pdf", "extracted_content": ""},
        ],
    }
    conversation = {"uuid": "conv-1", "name": "Budget", "created_at": "2025-04-01T08:00:00Z"}
    export.write_text(json.dumps([{**conversation, "chat_messages": [message]}]), encoding="utf-8")
    await run_import(engine, "claude", export)
    [(role, _, text)] = transcript(db_url, "claude-conv-1")
    assert role == "user"
    assert text == "What does this say about the budget?\n\nAttached budget.txt:\nQ3 travel budget: 4,200 EUR"
    found = await engine.session(NS, "s").search(query="travel budget")
    assert [hit.session for hit in found.results] == ["claude-conv-1"]


# markdown


async def test_markdown_notes_get_keys_from_their_paths_or_their_front_matter(engine):
    counts = await run_import(engine, "markdown", FIXTURES / "notes")
    assert counts.summary() == "3 notes: 3 written, 0 unchanged"  # .obsidian/ is not notes
    groceries = await engine.namespace(NS).get_page(page_id="groceries")
    assert groceries.content(Level.FULL) == "Oat milk, rye flour, and a new banneton for the sourdough."
    # Another app's front matter stays in the note; memvm's own gives the key, type and pin.
    plan = await engine.namespace(NS).get_page(page_id=ALPHA)
    assert plan.content(Level.FULL).startswith("---\ntitle: Alpha plan\n")
    seats = await engine.namespace(NS).get_page(page_id="prefs.seating")
    assert (seats.type, seats.pinned) == (PageType.PREFERENCE, True)
    assert seats.content(Level.FULL) == "The user prefers window seats on trains and aisle seats on planes."
    found = await engine.session(NS, "s").search(query="alpha launch suppliers")
    assert found.results[0].page_id == ALPHA
    again = await run_import(engine, "markdown", FIXTURES / "notes")
    assert (again.written, again.unchanged) == (0, 3)


async def test_a_note_longer_than_any_page_is_left_out_by_its_length_with_a_warning(open_engine, tmp_path):
    engine = await open_engine(EngineConfig(max_page_tokens=1_000))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "short.md").write_text("A short note.\n", encoding="utf-8")
    (notes / "long.md").write_text("lorem ipsum " * 3_000, encoding="utf-8")  # 36,000 characters
    counts = await run_import(engine, "markdown", notes)
    assert counts.summary() == "2 notes: 1 written, 0 unchanged, 1 skipped"
    (warning,) = counts.warnings
    assert warning.endswith(
        "is 36000 characters, over the 32000-character page limit (max_page_tokens): left out"
    )


async def test_a_changed_note_is_rewritten_under_its_key_and_an_empty_one_skipped(engine, tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(FIXTURES / "notes", notes)
    await run_import(engine, "markdown", notes)
    (notes / "groceries.md").write_text("Oat milk and eggs.\n", encoding="utf-8")
    (notes / "blank.md").write_text("\n", encoding="utf-8")
    counts = await run_import(engine, "markdown", notes / "groceries.md")
    assert counts.summary() == "1 notes: 1 written, 0 unchanged"
    assert (await engine.namespace(NS).get_page(page_id="groceries")).content(
        Level.FULL
    ) == "Oat milk and eggs."
    counts = await run_import(engine, "markdown", notes)
    assert counts.summary() == "4 notes: 0 written, 3 unchanged, 1 empty skipped"


async def test_a_markdown_export_imports_back_as_the_same_keys_types_and_texts(engine, tmp_path):
    await engine.session(NS, "s").remember(page=note("Tea, no sugar.\n\nAnd milk."), key="drinks:tea")
    claim = await engine.session(NS, "s").remember(page=note("Meets on Tuesdays", type=PageType.CLAIM))
    await run_import(engine, "markdown", FIXTURES / "notes")
    await run_import(engine, "claude", FIXTURES / "claude.json")
    out = tmp_path / "export"
    done = await export_markdown(engine, namespace=NS, out=out, force=False)
    assert (done.sessions, done.pages, done.notes) == (2, 4, 5)
    assert (out / "notes" / "drinks~tea.md").read_text(encoding="utf-8").startswith("---\nkey: drinks:tea\n")
    session = (out / "sessions" / f"{CLAUDE_SESSION}.md").read_text(encoding="utf-8")
    assert "Conversation: Greenhouse tomato blight" in session
    assert (
        "## user · 2025-02-03 09:15:30 UTC · " in session
        and "## assistant · 2025-02-03 09:16:10 UTC" in session
    )
    # Back into the same memory: nothing changes; into another namespace: the same notes.
    same = await run_import(engine, "markdown", out / "notes")
    assert (same.written, same.unchanged) == (0, 5)
    copied = await run_import(engine, "markdown", out / "notes", namespace="copy")
    assert copied.written == 5
    for name in ("drinks:tea", claim.page_id, "groceries", "prefs.seating", ALPHA):
        original = await engine.namespace(NS).get_page(page_id=name)
        copy = await engine.namespace("copy").get_page(page_id=name)
        assert (copy.content(Level.FULL), copy.type, copy.pinned) == (
            original.content(Level.FULL),
            original.type,
            original.pinned,
        )


async def test_a_markdown_export_refuses_a_folder_with_files_unless_forced(engine, tmp_path):
    await engine.session(NS, "s").remember(page=note("kept"), key="kept")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own file", encoding="utf-8")
    with pytest.raises(TransferError, match="is not empty"):
        await export_markdown(engine, namespace=NS, out=out, force=False)
    await export_markdown(engine, namespace=NS, out=out, force=True)
    assert (out / "mine.txt").exists() and (out / "notes" / "kept.md").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]


# keys


def test_a_key_is_a_function_of_its_name_alone():
    # A name that is a key already is used as it is; one that had to change gains its digest.
    assert name_for("entity:", "John_Smith", KEY_CHARS) == "entity:John_Smith"
    assert name_for("entity:", "John Smith / Ltd.", KEY_CHARS) == (
        f"entity:John_Smith_Ltd.-{digest('John Smith / Ltd.')}"
    )
    assert name_for("", "_drafts/-idea", KEY_CHARS) == f"drafts_-idea-{digest('_drafts/-idea')}"
    long = name_for("", "x" * 300, KEY_CHARS)
    assert len(long) == KEY_CHARS and long != name_for("", "x" * 299, KEY_CHARS)
    # Two names that change into the same text never share a key, whichever comes first.
    assert len({name_for("entity:", name, KEY_CHARS) for name in ("a b", "a_b", "a/b", "a  b")}) == 4
    # A name holding a secret never reaches a key: its digest stands in.
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    assert name_for("entity:", token, KEY_CHARS) == f"entity:secret-{digest(token)}"
    assert "ghp_" not in name_for("chatgpt-", f"id-{token}", 64)


# bad input


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BAD = [
    (
        "server-memory",
        "memory.json",
        '{"type":"entity","name":"a","observations":[]}\n{oops\n',
        "line 2 is not JSON",
    ),
    (
        "server-memory",
        "memory.json",
        '{"type":"thing"}\n',
        "line 1 is neither an entity nor a relation",
    ),
    (
        "server-memory",
        "memory.json",
        '{"type":"relation","from":"a"}\n',
        'line 1: "relationType" is missing',
    ),
    ("chatgpt", "conversations.json", "[{]", "not JSON at line 1"),
    ("chatgpt", "conversations.json", '{"title": "x"}', "is not a ChatGPT export"),
    ("chatgpt", "conversations.json", '[{"uuid": "u", "chat_messages": []}]', 'has no "mapping"'),
    ("claude", "conversations.json", '[{"title": "x", "mapping": {}}]', 'has no "chat_messages"'),
    (
        "claude",
        "conversations.json",
        '[{"uuid": "u", "chat_messages": [{"uuid": "m", "sender": "human", "text": "hi", "created_at": "soon"}]}]',
        "'soon' is not a date",
    ),
    ("markdown", "note.txt", "plain text", r"is not a markdown \(\.md\) file"),
    ("markdown", "note.md", "---\nkey: has space\n---\nx\n", "is not a memvm key"),
    (
        "markdown",
        "note.md",
        "---\nkey: k\ntype: transcript\n---\nx\n",
        "is not one a note can have",
    ),
]


@pytest.mark.parametrize(("source", "name", "text", "says"), BAD)
async def test_bad_input_is_refused_in_one_line_before_anything_is_written(
    engine, db_url, tmp_path, source, name, text, says
):
    path = write(tmp_path, name, text)
    with pytest.raises(TransferError, match=says) as refused:
        read_source(source, path)
    assert "\n" not in str(refused.value) and str(path) in str(refused.value)
    assert db_rows(db_url, "SELECT count(*) FROM pages") == [(0,)]


def test_a_missing_file_and_two_notes_under_one_key_are_refused(tmp_path):
    with pytest.raises(TransferError, match="there is no file at"):
        read_source("claude", tmp_path / "nothing.json")
    with pytest.raises(TransferError, match="there is no folder or file at"):
        read_source("markdown", tmp_path / "nothing")
    write(tmp_path, "a.md", "---\nkey: same\n---\none\n")
    write(tmp_path, "b.md", "---\nkey: same\n---\ntwo\n")
    with pytest.raises(TransferError, match="both give the key 'same'"):
        read_source("markdown", tmp_path)


async def test_a_note_whose_key_names_a_conversation_page_is_left_out_and_the_rest_written(engine, tmp_path):
    await run_import(engine, "claude", FIXTURES / "claude.json")
    write(tmp_path, "forged.md", "---\nkey: msg_000001\n---\nforged words\n")
    write(tmp_path, "fine.md", "a note of its own\n")
    counts = await run_import(engine, "markdown", tmp_path)
    assert counts.summary() == "2 notes: 1 written, 0 unchanged, 1 skipped"
    assert counts.warnings == [
        f"{tmp_path / 'forged.md'}: its key 'msg_000001' names a transcript page of a conversation, "
        "which a note cannot replace: left out"
    ]
    page = await engine.namespace(NS).get_page(page_id="msg_000001")
    assert page.type is PageType.TRANSCRIPT and "forged" not in page.content(Level.FULL)
    assert (await engine.namespace(NS).get_page(page_id="fine")).content(Level.FULL) == "a note of its own"


# expiry


async def test_a_markdown_export_leaves_out_expired_pages_and_dates_the_others_expiry(
    engine, clock, tmp_path
):
    await engine.session(NS, "s").remember(page=note("lasting"), key="lasting")
    await engine.session(NS, "s").remember(page=note("brief"), key="brief", ttl_seconds=60)
    await engine.session(NS, "s").remember(page=note("a week"), key="week", ttl_seconds=7 * 86_400)
    clock.advance(120)
    out = tmp_path / "export"
    done = await export_markdown(engine, namespace=NS, out=out, force=False)
    assert done.notes == 2 and sorted(p.name for p in (out / "notes").iterdir()) == ["lasting.md", "week.md"]
    expires = datetime.fromtimestamp(clock.now() - 120 + 7 * 86_400, UTC).isoformat()
    assert f"\nexpires: {expires}\n" in (out / "notes" / "week.md").read_text(encoding="utf-8")
    assert "expires:" not in (out / "notes" / "lasting.md").read_text(encoding="utf-8")
    # Read back, the note expires when it did; once that has passed, it is left out.
    copied = await run_import(engine, "markdown", out / "notes", namespace="copy")
    assert (copied.written, copied.expired) == (2, 0)
    week = await engine.namespace("copy").get_page(page_id="week")
    assert week.expires_at == pytest.approx(clock.now() - 120 + 7 * 86_400, abs=1)
    again = await run_import(engine, "markdown", out / "notes", namespace="copy")
    assert (again.written, again.unchanged) == (0, 2)
    clock.advance(8 * 86_400)
    late = await run_import(engine, "markdown", out / "notes", namespace="later")
    assert late.summary() == "2 notes: 1 written, 0 unchanged, 1 expired skipped"
    with pytest.raises(PageNotFound):
        await engine.namespace("later").get_page(page_id="week")


def test_each_registered_format_is_named_as_its_module_names_it():
    from memvm.engine.operations.importers.formats import FORMATS
    from memvm.engine.operations.importers.registry import FORMAT_MODULES

    assert list(FORMATS) == list(FORMAT_MODULES)
    assert all(source.name == name for name, source in FORMATS.items())
