"""A real browser for the end-to-end stage: Playwright driving the system's Chromium.

Playwright never downloads a browser here: it launches Debian's Chromium (`apt-get install
chromium`, at /usr/bin/chromium; MEMVM_CHROMIUM names another binary). Without Chromium or
Playwright the browser tests skip, unless MEMVM_REQUIRE_BROWSER is set (as `.ci/run` does), in
which case they fail.

`start_ui` runs the real `memvm ui` and hands back the URL it prints; `screenshot` writes the
README's pictures under docs/screenshots/ when MEMVM_SCREENSHOTS=1.
"""

import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM = Path(os.environ.get("MEMVM_CHROMIUM", "/usr/bin/chromium"))
# Without the background-networking flags Chromium keeps calling hosts a closed network refuses;
# --no-sandbox because CI runs as root, where Chromium's sandbox will not start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
VIEWPORT_WIDTH, VIEWPORT_HEIGHT = 1280, 800
# Seconds for `memvm ui` to print its URL (a busy 2-core machine starts Python slowly).
START_LIMIT = 60
UI_URL = re.compile(r"http://127\.0\.0\.1:\d+/#token=[^\s\"'<>]+")

UiServer = tuple[str, subprocess.Popen[str]]


def _unavailable(reason: str) -> None:
    if os.environ.get("MEMVM_REQUIRE_BROWSER"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def browser() -> Iterator["Browser"]:
    """Headless Chromium, started for one test and stopped after it.

    Not shared across tests: while Playwright's sync API is live it marks an asyncio loop as
    running on the main thread, so every anyio test run meanwhile fails ("Cannot run the event
    loop while another loop is running"). Browser tests are sync functions for the same reason;
    one that needs a seeded database gets it from a sync fixture calling `anyio.run`, named
    before `page` so that it runs before the browser starts.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed: pip install -e '.[ui-test]'")
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM}: apt-get install chromium, or set MEMVM_CHROMIUM")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: "Browser") -> Iterator["Page"]:
    """A page in a fresh context (no cookies or storage from another test), 1280x800."""
    context = browser.new_context(viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT})
    try:
        yield context.new_page()
    finally:
        context.close()


def start_printing_url(command: list[str]) -> UiServer:
    """Start `command` and wait for the URL on its first stdout line; stop it with `stop`.

    The rest of stdout is read and dropped, so a server that prints much never stalls on a full
    pipe; stderr goes to a temporary file and is shown if the process exits before its URL.
    """
    # The child keeps its own copy of the stderr file; ours is needed only to show it on failure.
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
        assert process.stdout is not None
        first: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_read_lines, args=(process.stdout, first), daemon=True).start()
        try:
            line: str | None = first.get(timeout=START_LIMIT)
        except queue.Empty:
            line = None
        found = UI_URL.search(line or "")
        if found is None:
            stop(process)
            stderr.seek(0)
            output = stderr.read().decode(errors="replace")[-2000:]
            said = (
                f"no line on stdout within {START_LIMIT} s" if line is None else f"first stdout line {line!r}"
            )
            raise AssertionError(f"no UI URL from {' '.join(command)} ({said}); stderr:\n{output}")
    return found.group(), process


def _read_lines(stdout: IO[str], first: "queue.Queue[str]") -> None:
    # An empty first line means stdout closed: the process exited before printing anything.
    first.put(stdout.readline())
    for _ in stdout:
        pass


def start_ui(db: Path, *extra: str) -> UiServer:
    """The real `memvm ui` on a free loopback port over `db`; returns its URL (with token) and process."""
    memvm = Path(sys.executable).with_name("memvm")
    return start_printing_url([str(memvm), "ui", "--db", str(db), "--port", "0", *extra])


def stop(process: subprocess.Popen[str]) -> None:
    """Terminate, and kill if it has not exited 30 s later."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture
def ui_server() -> Iterator[Callable[..., str]]:
    """Start `memvm ui` servers with `ui_server(db, *extra)` -> URL; all are stopped at the end."""
    started: list[subprocess.Popen[str]] = []

    def factory(db: Path, *extra: str) -> str:
        url, process = start_ui(db, *extra)
        started.append(process)
        return url

    yield factory
    for process in started:
        stop(process)


def screenshot(page: "Page", name: str, width: int, height: int) -> Path | None:
    """Save the page at `width` x `height` as docs/screenshots/NAME.png, only when MEMVM_SCREENSHOTS=1.

    Off by default, so an ordinary test run never rewrites the README's pictures.
    """
    if os.environ.get("MEMVM_SCREENSHOTS") != "1":
        return None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": height})
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def with_engine(db: str, body: str) -> None:
    """Run `body` (statements using `engine`) in another process with the database open, as a
    server or a hook would write to it; the browser tests stay sync (see `browser` above)."""
    indented = "".join(f"    {line}\n" for line in body.splitlines())
    script = (
        "import anyio, sys\n"
        "from memvm.engine import Engine, EngineConfig\n"
        "async def main():\n"
        "    engine = await Engine.open(sys.argv[1], EngineConfig())\n"
        f"{indented}"
        "    await engine.close()\n"
        "anyio.run(main)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=True, timeout=120)
