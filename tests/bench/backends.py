"""SQLite against PostgreSQL in one run: search and single writes at each size, and write throughput
through one and three `memvm serve --transport streamable-http` processes.

    .venv/bin/python tests/bench/backends.py [--sizes 10000,100000] [--samples 300] [--seconds 20]
                                             [--processes 1,3] [--db-url postgresql://...] [--out FILE]

Without --db-url a throwaway PostgreSQL server is started on loopback (tests/postgres_server.py;
it needs the server binaries, as the tests do); with it, a fresh database is created on that
server per size and dropped after. Each size fills one namespace with seeded synthetic
conversation (`synthetic.py`) through `ingest`, 100 messages a call (above `--bulk-above` pages,
through `write_history`, as scale_memvm.py --bulk), then times `search_pages` and `remember` (a
single write: one page, committed) `--samples` times each, in process. The throughput part starts
one and three server processes (`--processes`) on a fresh database of each backend, and counts
the writes (remember, ingest and record_tool_outcome in turn, as the multi-process test does)
that four clients per process complete in `--seconds`. The database server here runs with
synchronous_commit=off and fsync=off (a test server); SQLite runs with its defaults
(synchronous=FULL), so write figures favour PostgreSQL by what a flush costs: compare searches
freely, and writes knowing that.
"""

import argparse
import json
import random
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from fresh_postgres import Databases  # noqa: E402
from measure import summary  # noqa: E402
from memvm.engine import Engine  # noqa: E402
from memvm.engine.models.pages import NewPage, PageType, Role  # noqa: E402
from memvm.engine.models.writes import IngestMessage  # noqa: E402
from scale_memvm import NS as BULK_NS  # noqa: E402
from scale_memvm import fill_bulk  # noqa: E402
from synthetic import Corpus  # noqa: E402

from tests.e2e.test_http import http_server  # noqa: E402
from tests.e2e.writes import Acked, write_one  # noqa: E402

NS = BULK_NS
BATCH = 100
CONVERSATION = 200


async def fill(engine: Engine, corpus: Corpus, pages: int) -> float:
    start = time.perf_counter()
    for first in range(0, pages, BATCH):
        messages = [
            IngestMessage(role=Role.USER if i % 2 == 0 else Role.ASSISTANT, content=corpus.message())
            for i in range(first, min(pages, first + BATCH))
        ]
        await engine.session(NS, f"conv-{first // CONVERSATION}").ingest(messages=messages)
        if first and first % (pages // 5) == 0:
            print(f"    {first:,} pages, {first / (time.perf_counter() - start):,.0f}/s", file=sys.stderr)
    return time.perf_counter() - start


async def timings(target: str, pages: int, samples: int, bulk: bool) -> dict[str, Any]:
    engine = await Engine.open(target)
    corpus = Corpus()
    try:
        # Above --bulk-above, the same messages written as past conversations (scale_memvm.fill_bulk).
        seconds = await (fill_bulk(engine, corpus, pages) if bulk else fill(engine, corpus, pages))
        queries = [corpus.query() for _ in range(samples)]
        durations = []
        for query in queries:
            started = time.perf_counter()
            await engine.session(NS, "agent").search(query=query, limit=10)
            durations.append(time.perf_counter() - started)
        search = summary(durations)
        durations = []
        for n in range(samples):
            page = NewPage(content=corpus.message(), type=PageType.NOTE, provenance="model")
            started = time.perf_counter()
            await engine.session(NS, "agent").remember(page=page, key=f"note-{n}")
            durations.append(time.perf_counter() - started)
        single = summary(durations)
    finally:
        await engine.close()
    return {
        "pages": pages,
        "fill": "bulk" if bulk else "ingest",
        "fill_pages_per_s": pages / seconds,
        "search": search,
        "remember": single,
    }


async def throughput(target: str, processes: int, seconds: float) -> dict[str, Any]:
    acked = Acked()
    with ExitStack() as stack:
        urls = [stack.enter_context(http_server(target, None, "--tools", "all")) for _ in range(processes)]
        deadline = time.monotonic() + seconds

        async def writer(url: str, name: str) -> None:
            import httpx2
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            async with (
                httpx2.AsyncClient(timeout=60) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                n = 0
                while time.monotonic() < deadline:
                    await write_one(client, name, n, acked)
                    n += 1

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            for p, url in enumerate(urls):
                for w in range(4):
                    group.start_soon(writer, url, f"p{p}w{w}")
        elapsed = time.monotonic() - started
    return {
        "processes": processes,
        "writes": len(acked),
        "errors": len(acked.errors),
        "writes_per_s": len(acked) / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each throughput run")
    parser.add_argument("--processes", default="1,3", help="server processes of each throughput run")
    parser.add_argument("--bulk-above", type=int, default=10_000, help="larger sizes are filled in bulk")
    parser.add_argument("--db-url", help="a PostgreSQL server to use (default: a throwaway one)")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "backends.json")
    options = parser.parse_args()
    random.seed(7)
    databases = Databases(options.db_url)
    results: dict[str, Any] = {"sizes": [], "throughput": []}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for size in [int(s) for s in options.sizes.split(",")]:
                row: dict[str, Any] = {"pages": size}
                for backend in ("sqlite", "postgresql"):
                    target = (
                        str(Path(folder) / f"size-{size}.db") if backend == "sqlite" else databases.fresh()
                    )
                    print(f"  {backend}: {size:,} pages", file=sys.stderr)
                    row[backend] = anyio.run(
                        timings, target, size, options.samples, size > options.bulk_above
                    )
                results["sizes"].append(row)
                print(json.dumps(row), file=sys.stderr)
            for processes in [int(n) for n in options.processes.split(",")]:
                for backend in ("sqlite", "postgresql"):
                    target = (
                        str(Path(folder) / f"writes-{processes}.db")
                        if backend == "sqlite"
                        else databases.fresh()
                    )
                    measured = anyio.run(throughput, target, processes, options.seconds)
                    results["throughput"].append({"backend": backend, **measured})
                    print(json.dumps(results["throughput"][-1]), file=sys.stderr)
    finally:
        databases.close()
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(results, indent=1))
    print(
        "| pages | backend | search p50 ms | search p95 ms | remember p50 ms | remember p95 ms | fill pages/s |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in results["sizes"]:
        for backend in ("sqlite", "postgresql"):
            r = row[backend]
            print(
                f"| {row['pages']:,} | {backend} | {r['search']['p50_ms']:.2f} | {r['search']['p95_ms']:.2f} | "
                f"{r['remember']['p50_ms']:.2f} | {r['remember']['p95_ms']:.2f} | {r['fill_pages_per_s']:,.0f} |"
            )
    print("\n| server processes | backend | writes/s | errors |")
    print("|---|---|---|---|")
    for entry in results["throughput"]:
        print(
            f"| {entry['processes']} | {entry['backend']} | {entry['writes_per_s']:.0f} | {entry['errors']} |"
        )


if __name__ == "__main__":
    main()
