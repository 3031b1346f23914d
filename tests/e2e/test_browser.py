"""The browser test machinery itself: Playwright drives Chromium, and a UI process hands over its URL."""

import sys

import anyio
import pytest

from tests.e2e.browser import start_printing_url, stop

pytestmark = pytest.mark.slow

BUTTON_PAGE = (
    "data:text/html,<button onclick=\"document.getElementById('state').textContent='saved'\">Save</button>"
    "<p id=state>unsaved</p>"
)


def test_a_click_on_a_button_found_by_role_and_name_changes_the_page(page):
    page.goto(BUTTON_PAGE)
    assert page.locator("#state").text_content() == "unsaved"
    page.get_by_role("button", name="Save").click()
    assert page.locator("#state").text_content() == "saved"


def test_async_code_runs_again_once_a_browser_test_is_over():
    # Runs after the test above (pytest keeps file order): a browser left open across tests
    # would still mark an asyncio loop as running here.
    async def answer() -> int:
        return 42

    assert anyio.run(answer) == 42


def test_the_url_on_the_first_stdout_line_is_returned_and_the_process_stops():
    printer = (
        "import signal; print('memvm ui: http://127.0.0.1:8123/#token=aB3-_x9 (Ctrl-C stops)', flush=True);"
        "print('more output', flush=True); signal.pause()"
    )
    url, process = start_printing_url([sys.executable, "-c", printer])
    try:
        assert url == "http://127.0.0.1:8123/#token=aB3-_x9"
        assert process.poll() is None
    finally:
        stop(process)
    assert process.returncode is not None


def test_a_process_that_exits_without_a_url_fails_with_its_stderr():
    failing = "import sys; sys.stderr.write('cannot open the database'); sys.exit(2)"
    with pytest.raises(AssertionError, match="cannot open the database"):
        start_printing_url([sys.executable, "-c", failing])
