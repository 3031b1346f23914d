"""How fast the browser view's first screen answers on a large memory: `memvm ui` on a file of
100,000 pages, beside the same on 1,000 pages built in the same run.

    .venv/bin/python tests/bench/ui_first_render.py [--pages 100000]

For each file: the first page load (the HTML, its script and styles, the overview and the first
screen of pages, as the browser asks for them), a screen deep in the list (after paging through
to it by cursor), a search, and a session's context. Prints the median of 7 runs of each.
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
from memvm.engine.models import IngestMessage, Role

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
            await engine.ingest(namespace="default", session=f"s{start // 5000}", messages=messages)
    finally:
        await engine.close()


def _timed(call) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _measure(db: Path) -> dict[str, float]:
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
                for path in ("/", "/static/app.js", "/static/app.css", "/api/overview", "/api/pages"):
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
            for _ in range(7):
                runs["first load"].append(_timed(first_load))
                runs["5 screens of 200"].append(_timed(paging))
                runs["screen 9/10 down"].append(_timed(deep_screen))
                runs["search"].append(
                    _timed(lambda: client.get("/api/search", params={"q": "heron release"}))
                )
                runs["context"].append(_timed(lambda: client.get("/api/sessions/s0/context")))
        return {name: statistics.median(values) for name, values in runs.items()}
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    pages = parser.parse_args().pages
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for size in (1_000, pages):
            db = Path(folder) / f"{size}.db"
            started = time.perf_counter()
            anyio.run(_fill, db, size)
            print(f"built {size} pages in {time.perf_counter() - started:.0f} s", flush=True)
            results[size] = _measure(db)
        for name in results[pages]:
            small, large = results[1_000][name], results[pages][name]
            print(
                f"{name:20} {1_000:>7} pages {small * 1000:7.1f} ms   {pages:>7} pages {large * 1000:7.1f} ms"
            )


if __name__ == "__main__":
    main()
