"""The browser view in a real browser: Chromium driven by Playwright against the real `memvm ui`,
clicking, searching, pinning and forgetting, with the database checked after each change."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import db_rows
from tests.e2e.browser import screenshot, with_engine
from tests.seeding import chat_with_note, seed

if TYPE_CHECKING:
    from playwright.sync_api import Page

# On SQLite: what the view reads and writes is checked on both backends through its API (tests/ui/).
pytestmark = [pytest.mark.slow, pytest.mark.above_storage]
NS = "default"
EXPECT_TIMEOUT_MS = 20_000
HOSTILE = "our staging cluster is heron <img src=x onerror=\"document.title='owned'\">"


@pytest.fixture
def seeded(db_url: str) -> str:
    """A database with a conversation and a note; named before `page`, so it runs before the browser."""
    seed(db_url, chat_with_note(HOSTILE, "Noted: the staging cluster is heron."))
    return db_url


def _rows(db: str, sql: str) -> list[tuple]:
    return db_rows(db, sql)


def expect(target: Any) -> Any:
    # Imported when a test runs: the fast stage collects this module without Playwright installed,
    # and the browser fixtures say why a test cannot run (skipped, or failed where it must run).
    from playwright.sync_api import expect as playwright_expect

    # Playwright waits 5 s by default: a busy shared machine (Chromium, the view's server and
    # PostgreSQL on two cores) once took longer to open a page, and a wait is not what is tested.
    playwright_expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    return playwright_expect(target)


def _open(page: "Page", ui_server: Callable[..., str], db: str) -> None:
    """The view, at the agent internals' list of all pages (the first screen is the person's)."""
    page.goto(ui_server(db))
    expect(page.get_by_role("heading", name="memvm")).to_be_visible()
    page.get_by_role("button", name="All pages").click()
    expect(page.get_by_role("button", name="deploy-note")).to_be_visible()


def _answered_late(page: "Page", matches: str, delay_ms: int) -> None:
    """Hold the view's requests whose address `matches` (a JavaScript string method call, such as
    "includes('api/overview')") for `delay_ms` before sending them, as a busy machine would."""
    page.add_init_script(
        "const fetched = window.fetch;"
        f"window.fetch = (what, options) => String(what).{matches}"
        f" ? new Promise((done) => setTimeout(done, {delay_ms})).then(() => fetched(what, options))"
        " : fetched(what, options);"
    )


def test_pages_open_at_four_levels_and_stored_markup_stays_text(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    assert "token" not in page.url  # taken from the fragment, out of the address bar
    assert page.context.cookies() == []  # nothing ambient for another site or port to use
    page.get_by_role("button", name="msg_000001").click()
    detail = page.locator("#page-detail")
    expect(detail.get_by_role("heading", name="msg_000001")).to_be_visible()
    for level in ("full", "reduced", "abstract", "reference"):
        expect(detail.get_by_role("heading", name=level)).to_be_visible()
    expect(detail.locator("pre").first).to_contain_text('<img src=x onerror="document.title')
    assert page.title() == "memvm"  # the stored markup never ran
    screenshot(page, "all-pages-laptop", 1366, 768)
    screenshot(page, "all-pages-phone", 390, 844)


def test_search_ranks_and_a_session_filters(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    page.get_by_label("Search pages").fill("argo")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#pages tbody tr").first).to_contain_text("deploy-note")
    expect(page.get_by_role("status")).to_contain_text("1 page matches")


def test_pin_and_forget_change_the_database(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="msg_000002").click()
    page.get_by_role("button", name="Pin", exact=True).click()
    expect(page.get_by_role("button", name="Unpin")).to_be_visible()
    assert _rows(seeded, "SELECT pinned FROM pages WHERE page_id = 'msg_000002'") == [(1,)]

    page.get_by_role("button", name="Forget", exact=True).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Keep it").click()
    assert _rows(seeded, "SELECT count(*) FROM pages WHERE page_id = 'msg_000002'") == [(1,)]

    page.get_by_role("button", name="Forget", exact=True).click()
    page.get_by_role("dialog").get_by_role("button", name="Forget page").click()
    expect(page.get_by_role("status")).to_contain_text("Forgot msg_000002")
    assert _rows(seeded, "SELECT count(*) FROM pages WHERE page_id = 'msg_000002'") == [(0,)]
    expect(page.get_by_role("button", name="msg_000002")).to_have_count(0)


def test_a_redraw_that_returns_after_its_page_was_forgotten_leaves_the_status_alone(seeded, page, ui_server):
    # Reading the page back takes 2.5 s here, as on a busy machine: the redraw after pinning is
    # still on its way when the page is forgotten, and comes back to find it gone.
    _answered_late(page, "endsWith('api/pages/msg_000002')", 2500)
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="msg_000002").click()
    expect(page.get_by_role("button", name="Pin", exact=True)).to_be_visible()
    page.get_by_role("button", name="Pin", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Pinned")
    page.get_by_role("button", name="Forget", exact=True).click()
    page.get_by_role("dialog").get_by_role("button", name="Forget page").click()
    expect(page.get_by_role("status")).to_contain_text("Forgot msg_000002")
    page.wait_for_timeout(3000)  # the redraw's answer has come back meanwhile
    expect(page.get_by_role("status")).to_contain_text("Forgot msg_000002")


def test_a_remembered_note_is_edited_in_place(seeded, page, ui_server):
    before = _rows(
        seeded,
        "SELECT t.content FROM pages p JOIN page_texts t USING (rowid) WHERE p.page_id = 'deploy-note'",
    )[0][0]
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="deploy-note").click()
    page.get_by_role("button", name="Edit note").click()
    page.get_by_label("Note text").fill("Deploys go through flux now.")
    page.get_by_role("button", name="Save note").click()
    expect(page.get_by_role("status")).to_contain_text("Note saved")
    stored = _rows(
        seeded,
        "SELECT t.content FROM pages p JOIN page_texts t USING (rowid) WHERE p.page_id = 'deploy-note'",
    )
    assert stored == [("Deploys go through flux now.",)]
    # The text it replaced stays as the page's history, shown beneath its levels.
    expect(page.locator("#detail-meta")).to_contain_text("version 2")
    expect(page.locator("#levels .superseded")).to_have_count(1)
    expect(page.locator("#levels .superseded")).to_contain_text(before)
    expect(page.locator("#levels .superseded h4")).to_contain_text("version 1, written ")


def test_the_context_view_draws_the_budget_and_the_working_set(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="Context").click()
    expect(page.locator("#working-set")).to_contain_text("deploy-note")
    legend = page.locator("#budget-legend")
    for part in ("reserve", "pages at full", "free"):
        expect(legend).to_contain_text(part)
    expect(page.locator("#mutations")).to_contain_text("map")
    screenshot(page, "context-laptop", 1366, 768)
    screenshot(page, "context-phone", 390, 844)


def test_the_context_view_opened_before_the_sessions_arrive_still_shows_the_working_set(
    seeded, page, ui_server
):
    # The sessions (which fill the context view's session choice) arrive a second and a half late,
    # as on a busy machine: the context view opened meanwhile waits for them.
    _answered_late(page, "includes('api/overview')", 1500)
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="Context").click()
    expect(page.locator("#working-set")).to_contain_text("deploy-note")


def _write_from_another_process(db: str) -> None:
    with_engine(
        db,
        "from memvm.engine.models.pages import Role\n"
        "from memvm.engine.models.writes import IngestMessage\n"
        "await engine.session('default', 's2').ingest("
        "messages=[IngestMessage(role=Role.USER, content='a new prompt from another process')])\n",
    )


def test_the_view_follows_another_writer(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    _write_from_another_process(seeded)
    expect(page.get_by_role("button", name="msg_000003")).to_be_visible(timeout=30_000)


def test_a_note_being_edited_survives_another_writer(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="deploy-note").click()
    page.get_by_role("button", name="Edit note").click()
    page.get_by_label("Note text").fill("Half-typed new text")
    _write_from_another_process(seeded)
    expect(page.get_by_role("button", name="msg_000003")).to_be_visible(timeout=30_000)
    expect(page.get_by_label("Note text")).to_have_value("Half-typed new text")
    expect(page.get_by_label("Note text")).to_be_focused()


def test_the_memory_view_works_by_keyboard(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    page.get_by_label("Search pages").focus()
    page.keyboard.type("argo")
    page.keyboard.press("Enter")
    # The search's own answer, not the list drawn before it, which may also start with the page.
    expect(page.get_by_role("status")).to_contain_text("1 page matches.")
    expect(page.locator("#pages tbody tr").first).to_contain_text("deploy-note")
    page.get_by_role("button", name="deploy-note").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#page-detail").get_by_role("heading", name="deploy-note")).to_be_visible()


def test_long_lists_page_on_and_a_redraw_keeps_what_was_shown(seeded, page, ui_server):
    count = 205  # past one screen of 200
    with_engine(
        seeded,
        f"for i in range({count}):\n"
        "    await engine.session('default', 's1').bind_value(tool='quote', args={'i': i}, value=1000 + i)\n",
    )
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="Guards and procedures").click()
    rows = page.locator("#bindings tbody tr")
    expect(rows).to_have_count(200)
    more = page.get_by_role("button", name="More bindings")
    more.click()
    expect(rows).to_have_count(count)
    expect(rows.last).to_contain_text("$v1")
    expect(more).to_be_hidden()
    _write_from_another_process(seeded)  # the view redraws: all rows stay
    expect(page.locator("#namespace")).to_contain_text("4 pages", timeout=30_000)
    expect(rows).to_have_count(count)


def test_the_guards_view_shows_bindings_verdicts_and_what_fixed_an_error(seeded, page, ui_server):
    with_engine(
        seeded,
        "from memvm.engine.models.procedures import Outcome, ToolOutcome\n"
        "ns, s = 'default', 's1'\n"
        "await engine.session(ns, s).bind_value(tool='get_price', args={'sku': 'A1'}, value=1299)\n"
        "for _ in range(3):\n"
        "    await engine.session(ns, s).check_tool_call(tool='book_table', args={'party': 4}, will_run=True)\n"
        "failed = ToolOutcome(tool='book_table', args={'party': 4, 'time': '7pm'}, outcome=Outcome.FAILURE,\n"
        "                     error_type='ValueError', error_message='time must be HH:MM')\n"
        "fixed = ToolOutcome(tool='book_table', args={'party': 4, 'time': '19:00'}, outcome=Outcome.SUCCESS,\n"
        "                    result='booked')\n"
        "for call in (failed, fixed):\n"
        "    await engine.session(ns, s).record_tool_outcome(call=call)\n",
    )
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="Guards and procedures").click()
    bindings = page.locator("#bindings tbody tr")
    expect(bindings).to_have_count(2)  # the bound price, and the successful booking's result
    expect(bindings.last).to_contain_text("$v1")
    expect(bindings.last).to_contain_text("1299")
    verdicts = page.locator("#verdicts tbody tr")
    expect(verdicts).to_have_count(3)
    expect(verdicts.first).to_contain_text("block")
    expect(verdicts.first).to_contain_text("already ran with these arguments")
    expect(page.locator("#tools tbody tr").first).to_contain_text("1 (50%)")
    errors = page.locator("#errors tbody tr")
    expect(errors).to_have_count(1)
    expect(errors.first).to_contain_text("ValueError")
    expect(errors.first).to_contain_text("time must be HH:MM")
    expect(errors.first).to_contain_text("19:00")
    expect(page.locator("#successes tbody")).to_contain_text('"19:00"')
    screenshot(page, "guards-laptop", 1366, 768)
    screenshot(page, "guards-phone", 390, 844)


def test_direction_marks_in_stored_text_are_shown_not_obeyed(seeded, page, ui_server):
    with_engine(
        seeded,
        "from memvm.engine.models.pages import NewPage, PageType\n"
        "hidden = ''.join(chr(0xE0000 + ord(c)) for c in 'obey')\n"
        "note = NewPage(content='pay to account \\u202e4321 9876\\u202c ok; tags[' + hidden + '] word\\u2060joiner',"
        " type=PageType.NOTE, provenance='user')\n"
        "await engine.session('default', 's1').remember(page=note, key='account')\n",
    )
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="account").click()
    full = page.locator("#levels pre").first
    expect(full).to_contain_text("pay to account ⟨U+202E⟩4321 9876⟨U+202C⟩ ok")
    # Tag characters (invisible letters) and a word joiner are shown too, not silently kept.
    expect(full).to_contain_text("tags[⟨U+E006F⟩⟨U+E0062⟩⟨U+E0065⟩⟨U+E0079⟩] word⟨U+2060⟩joiner")
    page.get_by_role("button", name="Edit note").click()
    expect(page.locator("#edit-note")).to_contain_text("characters that reorder or hide text")


def test_focus_stays_on_a_page_link_while_another_writer_redraws_the_list(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    link = page.get_by_role("button", name="msg_000002")
    link.focus()
    _write_from_another_process(seeded)
    expect(page.get_by_role("button", name="msg_000003")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("button", name="msg_000002")).to_be_focused()


def test_focus_stays_in_an_open_page_while_another_writer_redraws_it(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="deploy-note").click()
    reduced = page.locator("#levels pre").nth(1)
    reduced.focus()
    _write_from_another_process(seeded)
    expect(page.get_by_role("button", name="msg_000003")).to_be_visible(timeout=30_000)
    expect(page.locator("#levels pre").nth(1)).to_be_focused()


def test_an_edit_over_a_note_rewritten_meanwhile_is_refused_and_the_text_kept(seeded, page, ui_server):
    _open(page, ui_server, seeded)
    page.get_by_role("button", name="deploy-note").click()
    page.get_by_role("button", name="Edit note").click()
    page.get_by_label("Note text").fill("Deploys go through argo, always.")
    with_engine(
        seeded,
        "from memvm.engine.models.pages import NewPage, PageType\n"
        "note = NewPage(content='Deploys go through flux.', type=PageType.NOTE, provenance='model')\n"
        "await engine.session('default', 's1').remember(page=note, key='deploy-note')\n",
    )
    page.get_by_role("button", name="Save note").click()
    expect(page.get_by_role("alert")).to_contain_text("changed since you opened it")
    expect(page.get_by_label("Note text")).to_have_value("Deploys go through argo, always.")
    stored = _rows(
        seeded,
        "SELECT t.content FROM pages p JOIN page_texts t USING (rowid) WHERE p.page_id = 'deploy-note'",
    )
    assert stored == [("Deploys go through flux.",)]
