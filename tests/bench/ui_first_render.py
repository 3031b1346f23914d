"""How fast the browser view's first screen answers on a large memory: `memvm ui` on a file of
100,000 pages, beside the same on 1,000 pages built in the same run.

    .venv/bin/python tests/bench/ui_first_render.py [--pages 100000] [--baseline-pages 1000] [--runs 7]

For each file: the first page load (the HTML, its scripts and styles, the overview, the notes and
the conversations, as the browser asks for them), a screen deep in the list of all pages (after
paging through to it by cursor), a search, and a session's context. Prints the median of `--runs` runs of each.

With Playwright and Chromium installed (`pip install -e '.[ui-test]'`, `apt-get install chromium`;
MEMVM_CHROMIUM names another binary, as for the browser tests) it also times the first render in
a real browser: from navigation until the first screen's conversations are drawn. And it exports the
whole namespace through the view, printing how long that took and the server's peak memory
before and after (the export is streamed, so the peak should not grow with the namespace).
"""

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
from memvm.engine import Engine, EngineConfig
from memvm.engine.models.pages import Role
from memvm.engine.models.writes import IngestMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.browser import CHROMIUM, CHROMIUM_ARGS

MEMVM = Path(sys.executable).with_name("memvm")
WORDS = [
    "deploy",
    "heron",
    "argo",
    "cluster",
    "staging",
    "release",
    "branch",
    "test",
    "parser",
    "module",
    "budget",
    "token",
    "page",
]


async def _fill(db: Path, pages: int) -> None:
    engine = await Engine.open(db, EngineConfig())
    try:
        batch = 500
        for start in range(0, pages, batch):
            messages = [
                IngestMessage(
                    role=Role.USER if n % 2 == 0 else Role.ASSISTANT,
                    content=f"message {n}: " + " ".join(WORDS[(n + k) % len(WORDS)] for k in range(12)),
                )
                for n in range(start, min(pages, start + batch))
            ]
            await engine.session("default", f"s{start // 5000}").ingest(messages=messages)
    finally:
        await engine.close()


# What the browser asks for to draw the first screen: the page, its scripts and styles, the
# overview, the notes and the conversations.
FIRST_SCREEN = (
    "/",
    "/static/markdown.js",
    "/static/app.js",
    "/static/home.js",
    "/static/app.css",
    "/api/overview",
    "/api/notes",
    "/api/conversations",
)


def _timed(call) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _measure(db: Path, repeats: int) -> dict[str, float]:
    process = subprocess.Popen([str(MEMVM), "ui", "--db", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        found = re.match(r"(http://[^/]+)/#token=(\S+)", process.stdout.readline().strip())
        assert found
        base, token = found.groups()
        with httpx2.Client(
            base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=120
        ) as client:

            def first_load() -> None:
                for path in FIRST_SCREEN:
                    client.get(path).raise_for_status()

            def paging() -> None:
                cursor = None
                for _ in range(5):
                    params = {"limit": 200} if cursor is None else {"limit": 200, "before": cursor}
                    cursor = client.get("/api/pages", params=params).json()["next"]

            newest = int(client.get("/api/pages", params={"limit": 1}).json()["next"]) + 1

            def deep_screen() -> None:
                # The screen nine tenths of the way down the list.
                client.get("/api/pages", params={"before": newest - newest * 9 // 10}).raise_for_status()

            runs: dict[str, list[float]] = {
                "first load": [],
                "5 screens of 200": [],
                "screen 9/10 down": [],
                "search": [],
                "context": [],
            }
            for _ in range(repeats):
                runs["first load"].append(_timed(first_load))
                runs["5 screens of 200"].append(_timed(paging))
                runs["screen 9/10 down"].append(_timed(deep_screen))
                runs["search"].append(
                    _timed(lambda: client.get("/api/search", params={"q": "heron release"}))
                )
                runs["context"].append(_timed(lambda: client.get("/api/sessions/s0/context")))
            browser = _browser_first_render(f"{base}/#token={token}", repeats)
            if browser is not None:
                runs["first render in Chromium"] = browser
            peak_before = _peak_rss_mb(process.pid)
            exported = _timed(lambda: client.get("/api/export").raise_for_status())
            runs["export (whole namespace)"] = [exported]
            print(
                f"  export: server peak memory {peak_before:.0f} MB before, "
                f"{_peak_rss_mb(process.pid):.0f} MB after",
                flush=True,
            )
        return {name: statistics.median(values) for name, values in runs.items()}
    finally:
        process.terminate()
        process.wait(timeout=30)


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (Linux's VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _browser_first_render(url: str, repeats: int) -> list[float] | None:
    """Seconds from navigation to the first screen drawn (its conversations listed), in fresh tabs;
    None without a browser."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("  (no Playwright: the first render in a browser is not timed)", flush=True)
        return None
    if not CHROMIUM.exists():
        print(f"  (no Chromium at {CHROMIUM}: the first render in a browser is not timed)", flush=True)
        return None
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for _ in range(repeats):
                context = browser.new_context()
                page = context.new_page()
                started = time.perf_counter()
                page.goto(url)
                # A locator, not a script: the view's CSP refuses evaluated strings.
                page.locator("#conversations button.card").first.wait_for()
                times.append(time.perf_counter() - started)
                context.close()
        finally:
            browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--baseline-pages", type=int, default=1_000, help="the small file beside it")
    parser.add_argument("--runs", type=int, default=7, help="runs of each request (the median is printed)")
    options = parser.parse_args()
    sizes = {"baseline": options.baseline_pages, "large": options.pages}
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for name, size in sizes.items():
            db = Path(folder) / f"{name}.db"
            started = time.perf_counter()
            anyio.run(_fill, db, size)
            print(f"built {size} pages in {time.perf_counter() - started:.0f} s", flush=True)
            results[name] = _measure(db, options.runs)
        small_pages, pages = sizes["baseline"], sizes["large"]
        for name in results["large"]:
            small, large = results["baseline"][name], results["large"][name]
            print(
                f"{name:20} {small_pages:>7} pages {small * 1000:7.1f} ms   {pages:>7} pages {large * 1000:7.1f} ms"
            )


if __name__ == "__main__":
    main()
