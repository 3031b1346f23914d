"""The browser view's first screen in a real browser (Chromium through Playwright, against the real
`memvm ui`), on a database filled by imports and a host's hooks: the person's notes and
conversations, a conversation found by its title and read oldest first, and a note added, edited,
pinned and forgotten, with the database checked after each change."""

import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from memvm.engine.models.pages import NewPage, PageType
from memvm.engine.operations.importers.formats import read_source

from tests.conftest import db_rows
from tests.e2e.browser import screenshot, with_engine
from tests.e2e.test_view_browser import expect
from tests.hooks import claude_code_events as cc
from tests.hooks.runner import run_hook, stop_background
from tests.hooks.session_players import ClaudeCodeSession, work_tree
from tests.seeding import seed

if TYPE_CHECKING:
    from playwright.sync_api import Page

# On SQLite: what the view reads and writes is checked on both backends through its API (tests/ui/).
pytestmark = [pytest.mark.slow, pytest.mark.above_storage]
NS = "default"
IMPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
FIRST_PROMPT = "Add a watering schedule to the planner: every other day for the tomatoes."
PINNED = "We adopted a beagle puppy named Pixel last spring."


def imported(source: str) -> Callable[[Any], Any]:
    async def fill(engine: Any) -> None:
        await read_source(source, IMPORTS / f"{source}.json")(engine, NS)

    return fill


async def notes(engine: Any) -> None:
    desk = engine.session(NS, "desk")
    await desk.remember(page=NewPage(content=PINNED, type=PageType.NOTE, provenance="user", pinned=True))
    dentist = "Dentist: Dr. Okafor at Brightsmile, cleanings on Tuesdays."
    await desk.remember(page=NewPage(content=dentist, type=PageType.NOTE, provenance="user"), key="dentist")


@pytest.fixture
def lived_in(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Two imported histories (ChatGPT's and Claude's, with their titles), a Claude Code session
    recorded through the hooks' own code in a project `garden`, and two notes, one pinned."""
    seed(db_url, imported("chatgpt"), imported("claude"), notes)
    runtime = Path(tempfile.mkdtemp(prefix="mvh"))  # short: a Unix socket lives there
    monkeypatch.setenv("MEMVM_RUNTIME_DIR", str(runtime))
    garden = work_tree(tmp_path, "garden")
    host = ClaudeCodeSession(run_hook, db_url, cc.SESSION, garden / "src", tmp_path / "session.jsonl")
    try:
        host.send(cc.session_start())
        host.prompt(FIRST_PROMPT)
        host.reply("Done: tomatoes every other day, basil daily.")
        yield db_url
    finally:
        stop_background(runtime)
        shutil.rmtree(runtime, ignore_errors=True)


def _first_screen(page: "Page", url: str) -> None:
    page.goto(url)
    expect(page.get_by_role("heading", name="Notes")).to_be_visible()
    expect(page.locator("#conversations button.card").first).to_be_visible()


def test_the_first_screen_is_the_persons_memory_and_a_conversation_reads_oldest_first(
    lived_in, page, ui_server
):
    _first_screen(page, ui_server(lived_in))
    notes = page.locator("#notes button.card")
    expect(notes.first).to_contain_text(PINNED)
    expect(notes.first).to_contain_text("Pinned")
    talks = page.locator("#conversations")
    expect(talks).to_contain_text("Sourdough starter help")  # an imported title
    # The hooks' session: its first prompt and its project.
    hooked = talks.get_by_role("button", name=re.compile(re.escape(FIRST_PROMPT)))
    expect(hooked).to_contain_text("in garden")
    # Ids, levels and token counts are not on this screen.
    expect(page.locator("#view-home")).not_to_contain_text("msg_0000")
    expect(page.locator("#view-home")).not_to_contain_text("tokens")
    screenshot(page, "first-screen-laptop", 1366, 768)
    screenshot(page, "first-screen-phone", 390, 844)

    page.get_by_label("Search your memory").fill("sourdough starter help")
    found = page.locator("#found")
    by_title = found.get_by_role("button", name=re.compile("^Sourdough starter help"))
    expect(by_title).to_be_visible()
    expect(talks).to_be_hidden()
    by_title.click()

    expect(page.get_by_role("heading", name="Sourdough starter help")).to_be_visible()
    messages = page.locator("#thread > li")
    expect(messages).to_have_count(4)
    roles = [messages.nth(i).locator("strong").first.inner_text() for i in range(4)]
    assert roles == ["You", "Assistant", "You", "Assistant"]
    times = [messages.nth(i).locator("time").get_attribute("datetime") for i in range(4)]
    assert times == sorted(times) and len(set(times)) == 4
    expect(messages.first).to_contain_text("smells like acetone")
    screenshot(page, "conversation-laptop", 1366, 768)
    screenshot(page, "conversation-phone", 390, 844)

    # Back to the list, the focus on what was opened; the hooks' session reads the same way.
    page.get_by_role("button", name="Back to the list").click()
    page.get_by_label("Search your memory").fill("")
    expect(talks).to_be_visible()
    hooked.click()
    expect(page.locator("#thread > li").first).to_contain_text(FIRST_PROMPT)
    expect(page.locator("#thread > li").first.locator("strong").first).to_have_text("You")


def test_a_note_is_added_edited_pinned_and_forgotten_and_the_database_says_so(lived_in, page, ui_server):
    _first_screen(page, ui_server(lived_in))
    page.get_by_role("button", name="New note").click()
    page.get_by_label("Text (markdown)").fill("**Gate code**: 4412\n\n- the back door sticks")
    page.get_by_label(re.compile("^Key")).fill("gate-code")
    page.get_by_label(re.compile("^Forget after")).fill("30")
    page.get_by_role("button", name="Save note").click()
    expect(page.get_by_role("status")).to_contain_text("Note saved")
    expect(page.get_by_role("heading", name="gate-code")).to_be_visible()
    expect(page.locator("#reader-body strong")).to_have_text("Gate code")
    expect(page.locator("#reader-body li")).to_have_text("the back door sticks")
    # Listed by its text as it reads, without the marks.
    expect(page.locator("#notes").get_by_role("button", name=re.compile("^Gate code: 4412"))).to_be_visible()
    [(text, provenance, pinned, lasts)] = db_rows(
        lived_in,
        "SELECT t.content, p.provenance, p.pinned, p.expires_at - p.created_at FROM pages p "
        "JOIN page_texts t ON t.rowid = p.rowid WHERE p.page_id = 'gate-code'",
    )
    assert (text, provenance, pinned) == ("**Gate code**: 4412\n\n- the back door sticks", "memvm ui", 0)
    assert lasts == pytest.approx(30 * 86_400)

    page.get_by_role("button", name="Edit", exact=True).click()
    page.get_by_label("Text (markdown)").fill("**Gate code**: 5523")
    page.get_by_role("button", name="Save note").click()
    expect(page.locator("#reader-body")).to_have_text("Gate code: 5523")
    expect(page.get_by_text("Earlier versions")).to_be_visible()
    assert db_rows(
        lived_in,
        "SELECT t.content FROM pages p JOIN page_texts t ON t.rowid = p.rowid WHERE p.page_id = 'gate-code'",
    ) == [("**Gate code**: 5523",)]

    page.get_by_role("button", name="Pin", exact=True).click()
    expect(page.get_by_role("button", name="Unpin")).to_be_visible()
    assert db_rows(lived_in, "SELECT pinned FROM pages WHERE page_id = 'gate-code'") == [(1,)]
    screenshot(page, "note-laptop", 1366, 768)
    screenshot(page, "note-phone", 390, 844)

    page.get_by_role("button", name="Forget", exact=True).click()
    page.get_by_role("dialog").get_by_role("button", name="Forget page").click()
    expect(page.get_by_role("status")).to_contain_text("Forgot gate-code")
    expect(page.locator("#reader")).to_be_hidden()
    expect(page.locator("#notes")).not_to_contain_text("Gate code")
    assert db_rows(lived_in, "SELECT count(*) FROM pages WHERE page_id = 'gate-code'") == [(0,)]


HOSTILE_NOTE = (
    "Trip notes <img src=x onerror=\"document.title='owned'\">\n\n"
    "![map](http://tracker.invalid/pixel.png) [docs](https://example.com/guide) "
    "[run](javascript:document.title='owned')"
)


@pytest.fixture
def with_hostile_note(lived_in: str) -> str:
    """`lived_in` with a note holding markup, a remote image and a script link; named before
    `page`, so it is written before the browser starts."""

    async def stored(engine: Any) -> None:
        note = NewPage(content=HOSTILE_NOTE, type=PageType.NOTE, provenance="user")
        await engine.session(NS, "desk").remember(page=note, key="trip")

    seed(lived_in, stored)
    return lived_in


def test_a_note_in_markdown_shows_no_stored_markup_nor_remote_image(with_hostile_note, page, ui_server):
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    _first_screen(page, ui_server(with_hostile_note))
    page.locator("#notes").get_by_role("button", name=re.compile("^Trip notes")).click()
    body = page.locator("#reader-body")
    expect(body).to_contain_text("<img src=x onerror=")  # shown as the text it is
    expect(body).to_contain_text("[image: map]")
    expect(body.locator("img")).to_have_count(0)
    link = body.get_by_role("link", name="docs")
    expect(link).to_have_attribute("href", "https://example.com/guide")
    expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(body.get_by_role("link")).to_have_count(1)  # the javascript: one stays text
    assert page.title() == "memvm"
    assert not [url for url in asked if "tracker.invalid" in url]


def test_internals_open_on_the_latest_session_with_anything_and_read_only_offers_no_changes(
    lived_in, page, ui_server
):
    url = ui_server(lived_in)
    _first_screen(page, url)
    # The view's own session, made by a pin from the view, is never the one opened.
    page.locator("#notes button.card").first.click()
    page.get_by_role("button", name="Unpin").click()
    expect(page.get_by_role("button", name="Pin", exact=True)).to_be_visible()
    page.get_by_role("button", name="Context").click()
    chosen = page.locator("#context-session")
    expect(chosen).to_have_value(re.compile(".+"))
    expect(chosen).not_to_have_value("memvm-ui")
    expect(page.locator("#working-set")).not_to_be_empty()
    screenshot(page, "internals-laptop", 1366, 768)
    screenshot(page, "internals-phone", 390, 844)

    reader = page.context.new_page()
    _first_screen(reader, ui_server(lived_in, "--read-only"))
    expect(reader.get_by_role("button", name="New note")).to_be_hidden()
    reader.locator("#notes").get_by_role("button", name=re.compile(f"^{re.escape(PINNED)}")).click()
    expect(reader.locator("#reader-body")).to_contain_text(PINNED)
    for action in ("Pin", "Unpin", "Edit", "Forget"):
        expect(reader.get_by_role("button", name=action, exact=True)).to_have_count(0)


def _no_sideways_scroll(page: "Page") -> None:
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_on_a_phone_nothing_runs_off_the_screen_and_the_keyboard_opens_and_closes_the_reader(
    lived_in, page, ui_server
):
    page.set_viewport_size({"width": 390, "height": 844})
    _first_screen(page, ui_server(lived_in))
    _no_sideways_scroll(page)
    # By keyboard alone: search, move to a match, open it, and Escape back to where it was.
    page.get_by_label("Search your memory").focus()
    page.keyboard.type("sourdough starter help")
    match = page.locator("#found").get_by_role("button", name=re.compile("^Sourdough starter help"))
    expect(match).to_be_visible()
    match.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Sourdough starter help")).to_be_focused()
    expect(page.locator("#find")).to_be_hidden()  # the reader takes a phone's screen
    _no_sideways_scroll(page)
    page.keyboard.press("Escape")
    expect(page.locator("#reader")).to_be_hidden()
    expect(match).to_be_focused()
    page.get_by_label("Search your memory").fill("")
    expect(page.locator("#notes").get_by_role("button").first).to_be_visible()
    page.locator("#notes").get_by_role("button").first.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#reader-body")).to_contain_text(PINNED)
    _no_sideways_scroll(page)
    page.get_by_role("button", name="Back to the list").press("Enter")
    expect(page.locator("#notes").get_by_role("button").first).to_be_focused()
    # The internals too, whose session pickers list sessions by their long ids.
    for view in ("Context", "Guards and procedures", "All pages"):
        page.get_by_role("button", name=view).click()
        expect(page.get_by_role("button", name=view)).to_have_attribute("aria-pressed", "true")
        _no_sideways_scroll(page)


def test_the_first_screen_follows_another_writer_and_keeps_a_note_being_written(lived_in, page, ui_server):
    _first_screen(page, ui_server(lived_in))
    page.get_by_role("button", name="New note").click()
    page.get_by_label("Text (markdown)").fill("Half-typed")
    with_engine(
        lived_in,
        "from memvm.engine.models.pages import NewPage, PageType, Role\n"
        "from memvm.engine.models.writes import IngestMessage\n"
        "note = NewPage(content='Boiler service is due in October.', type=PageType.NOTE, provenance='user')\n"
        "await engine.session('default', 'desk').remember(page=note)\n"
        "said = [IngestMessage(role=Role.USER, content='a new prompt from another process')]\n"
        "await engine.session('default', 's2').ingest(messages=said)\n",
    )
    expect(page.locator("#notes")).to_contain_text("Boiler service is due in October.", timeout=30_000)
    expect(page.locator("#conversations")).to_contain_text("a new prompt from another process")
    expect(page.get_by_label("Text (markdown)")).to_have_value("Half-typed")
    expect(page.get_by_label("Text (markdown)")).to_be_focused()
