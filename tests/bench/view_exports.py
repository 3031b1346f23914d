"""Exports nobody reads, through the browser view of `memvm serve`: what they hold on the server,
and what another tenant waits meanwhile.

    .venv/bin/python tests/bench/view_exports.py [--backend sqlite|postgresql] [--pages 3000]
                                                 [--requests 200] [--hold 10] [--wait-cut]
                                                 [--db-url postgresql://...]

One `memvm serve --transport streamable-http` process with a tokens file serves the view at /ui/
to two tenants. Alice's namespace gets `--pages` pages of seeded synthetic conversation, Bob's a
few hundred. Bob searches alone for `--hold` seconds, for a baseline. Then `--requests` sockets each ask for Alice's export and read its status line and
nothing more (a small receive buffer, so the server's answer stops at once). For `--hold` seconds
the benchmark samples, every 100 ms, the bytes the server holds in deleted temporary files (the
export spools, from /proc) and, on PostgreSQL, the server's connections to the database
(pg_stat_activity); meanwhile Bob searches through the view, one search after another. With
`--wait-cut` it then waits until the server has cut the downloads that read nothing and freed
their spools, and says how long that took.

Prints one line of figures and, last, the same as JSON. Without --db-url a throwaway PostgreSQL
server is started on loopback (tests/postgres_server.py), as for the tests.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from fresh_postgres import Databases  # noqa: E402
from memvm.engine import Engine  # noqa: E402
from memvm.engine.models.pages import Role  # noqa: E402
from memvm.engine.models.writes import IngestMessage  # noqa: E402
from synthetic import Corpus  # noqa: E402

from tests.e2e.test_http import free_port, wait_listening  # noqa: E402
from tests.e2e.test_view_limits import spooled_bytes, unread_exports  # noqa: E402

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef0000"
BOB_PAGES = 300
BATCH = 100


async def fill(db: str, pages: int) -> None:
    corpus = Corpus()
    engine = await Engine.open(db)
    try:
        for namespace, count in (("alice", pages), ("bob", BOB_PAGES)):
            for first in range(0, count, BATCH):
                messages = [
                    IngestMessage(role=Role.USER if i % 2 == 0 else Role.ASSISTANT, content=corpus.message())
                    for i in range(first, min(count, first + BATCH))
                ]
                await engine.session(namespace, f"s{first // 1000}").ingest(messages=messages)
    finally:
        await engine.close()


def connections(admin_url: str | None, database: str) -> int:
    if admin_url is None:
        return 0
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)).fetchone()
    return int(row[0]) if row else 0


def export_size(port: int) -> int:
    with httpx2.Client(headers={"Authorization": f"Bearer {ALICE}"}, timeout=300) as http:
        answer = http.get(f"http://127.0.0.1:{port}/ui/api/export")
        answer.raise_for_status()
        return len(answer.content)


def searches(port: int, stop: threading.Event, times: list[float]) -> None:
    """Bob's searches, one after another, until `stop`; each one's seconds in `times`."""
    with httpx2.Client(headers={"Authorization": f"Bearer {BOB}"}, timeout=300) as http:
        while not stop.is_set():
            started = time.perf_counter()
            http.get(f"http://127.0.0.1:{port}/ui/api/search", params={"q": "the plan for friday"})
            times.append(time.perf_counter() - started)


def run(args: argparse.Namespace, folder: Path, db: str, admin_url: str | None) -> dict[str, Any]:
    anyio.run(fill, db, args.pages)
    tokens = folder / "tokens.json"
    tokens.write_text(json.dumps({ALICE: "alice", BOB: "bob"}))
    database = db.rsplit("/", 1)[-1]
    port = free_port()
    log = folder / "server.log"
    command = [sys.executable, "-m", "memvm.server", "serve", "--transport", "streamable-http"]
    with log.open("wb") as stderr:
        server = subprocess.Popen(
            [*command, "--port", str(port), "--tokens", str(tokens), "--db", db],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_listening(server, port, log)
        size = export_size(port)
        baseline: list[float] = []
        stop = threading.Event()
        quiet = threading.Thread(target=searches, args=(port, stop, baseline))
        quiet.start()
        time.sleep(args.hold)
        stop.set()
        quiet.join()

        during: list[float] = []
        stop = threading.Event()
        bob = threading.Thread(target=searches, args=(port, stop, during))
        bob.start()
        peak_spool = peak_connections = 0
        sampling = threading.Event()

        def sample() -> None:
            nonlocal peak_spool, peak_connections
            while not sampling.is_set():
                peak_spool = max(peak_spool, spooled_bytes(server.pid))
                peak_connections = max(peak_connections, connections(admin_url, database))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.monotonic()
        held, answers = unread_exports(port, ALICE, args.requests, path="/ui/api/export")
        statuses = {str(status): answers.count(status) for status in set(answers)}
        time.sleep(max(0.0, args.hold - (time.monotonic() - started)))
        stop.set()
        bob.join()
        freed_after = None
        if args.wait_cut:
            while spooled_bytes(server.pid) and time.monotonic() - started < 600:
                time.sleep(0.5)
            freed_after = round(time.monotonic() - started, 1)
        sampling.set()
        sampler.join()
        for sock in held:
            sock.close()
    finally:
        server.terminate()
        server.wait(timeout=60)
    return {
        "backend": args.backend,
        "pages": args.pages,
        "export_bytes": size,
        "requests": args.requests,
        "statuses": statuses,
        "peak_spooled_bytes": peak_spool,
        "peak_pg_connections": peak_connections if admin_url else None,
        "search_ms_quiet": round(statistics.median(baseline) * 1000, 1),
        "search_ms_median": round(statistics.median(during) * 1000, 1) if during else None,
        "search_ms_max": round(max(during) * 1000, 1) if during else None,
        "searches": len(during),
        "spools_freed_after_s": freed_after,
        "log_bytes": log.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--hold", type=float, default=10.0, help="seconds to sample while nothing is read")
    parser.add_argument("--wait-cut", action="store_true", help="then wait until every spool is freed")
    parser.add_argument("--db-url", help="a PostgreSQL server to make the database on (else a throwaway one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memvm-exports-") as name:
        folder = Path(name)
        if args.backend == "sqlite":
            result = run(args, folder, str(folder / "memvm.db"), None)
        else:
            databases = Databases(args.db_url)
            try:
                result = run(args, folder, databases.fresh(), databases.server_url)
            finally:
                databases.close()
    statuses = " ".join(f"{status}={count}" for status, count in sorted(result["statuses"].items()))
    print(
        f"view_exports: backend={result['backend']} pages={result['pages']:,} "
        f"export_bytes={result['export_bytes']:,} requests={result['requests']} {statuses} "
        f"peak_spooled_bytes={result['peak_spooled_bytes']:,} "
        f"peak_pg_connections={result['peak_pg_connections']} "
        f"search_ms quiet={result['search_ms_quiet']} during median={result['search_ms_median']} "
        f"max={result['search_ms_max']} spools_freed_after_s={result['spools_freed_after_s']} "
        f"log_bytes={result['log_bytes']:,}"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
