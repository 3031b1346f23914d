"""Load: 8 sessions x 200 mixed calls at once over streamable HTTP, beside a no-op in the same run.

One server process (memvm's own, plus a `noop` tool: tests/bench/noop_server.py) first answers
8 x 200 `noop` calls, which measures what the transport and SDK alone cost on this machine now,
then 8 x 200 calls of memvm's tools. Every call must succeed and the WAL must stay bounded
(checkpoints keep up with the writers). The latencies are figures on the printed line, beside the
no-op's; the test holds them only to a sanity bound, since on a shared machine they move with the
neighbours' load (tests/bench/e2e.py is the benchmark).
"""

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_http import START_LIMIT, free_port, wait_listening

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SESSIONS = 8
CALLS = 200
NOOP_SERVER = Path(__file__).parent.parent / "bench" / "noop_server.py"
# SQLite checkpoints the WAL back into the file every 1,000 pages (4 MiB). Four times that leaves
# room for a checkpoint that waits on a reader, and still fails a WAL that only ever grows.
WAL_LIMIT = 16 * 2**20
CALL_LIMIT = 60.0  # seconds: no single call may take longer, however busy the machine


def mixed_call(session: str, n: int) -> tuple[str, dict]:
    """The n-th call of a session: writes, reads, a fault and the guards, in a fixed cycle."""
    s = {"session": session}
    match n % 8:
        case 0:  # a user message starts a turn, so the fault below is within the turn's allowance
            return "ingest", {
                "messages": [{"role": "user", "content": f"{session} asks about pumps {n}"}],
                **s,
            }
        case 1:
            return "remember", {
                "content": f"{session} note {n} on pump pressure",
                "key": f"{session}-{n}",
                **s,
            }
        case 2:
            return "page_fault", {"page_id": f"{session}-{n - 1}", "target_level": n % 4, **s}
        case 3:
            return "search_pages", {"query": f"pump pressure {n}", "limit": 5, **s}
        case 4:
            return "bind_value", {"tool": "gauge", "args": {"n": n}, "value": n * 1.5, **s}
        case 5:
            return "check_tool_call", {"tool": "valve", "args": {"bar": n * 1.5}, **s}
        case 6:
            call = {"tool": "valve", "args": {"bar": n}, "outcome": "success", "result": n}
            return "record_tool_outcome", {**call, **s}
        case _:
            return "get_procedural_hints", {"tools": ["valve"], "max_tokens": 300}


async def run_session(url: str, session: str, calls, latencies: list[float], errors: list[str]) -> None:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for n in range(CALLS):
            tool, arguments = calls(session, n)
            started = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            latencies.append(time.perf_counter() - started)
            if result.is_error:
                errors.append(f"{tool}: {result.content[0].text}")


async def load(url: str, calls) -> tuple[list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    async with anyio.create_task_group() as group:
        for index in range(SESSIONS):
            group.start_soon(run_session, url, f"s{index}", calls, latencies, errors)
    return latencies, errors


def p99(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=100)[98]


@contextmanager
def noop_server(db: Path) -> Iterator[str]:
    """memvm's server plus `noop`, over streamable HTTP on a free loopback port; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(NOOP_SERVER), str(db), "streamable-http", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_listening(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_eight_sessions_of_mixed_calls_all_succeed_and_the_wal_stays_bounded(tmp_path, report_figure):
    db = tmp_path / "load.db"
    wal = anyio.Path(f"{db}-wal")
    largest_wal = 0

    async def watch_wal() -> None:
        nonlocal largest_wal
        while True:
            if await wal.exists():
                largest_wal = max(largest_wal, (await wal.stat()).st_size)
            await anyio.sleep(0.05)

    with noop_server(db) as url, anyio.fail_after(START_LIMIT * 5):
        noop_latencies, noop_errors = await load(url, lambda session, n: ("noop", {}))
        async with anyio.create_task_group() as group:
            group.start_soon(watch_wal)
            latencies, errors = await load(url, mixed_call)
            group.cancel_scope.cancel()
    report_figure(
        f"load: calls={len(latencies)} errors={len(errors)} p50={statistics.median(latencies) * 1000:.1f}ms "
        f"p99={p99(latencies) * 1000:.1f}ms noop_p99={p99(noop_latencies) * 1000:.1f}ms "
        f"max={max(latencies) * 1000:.0f}ms max_wal={largest_wal / 2**20:.1f}MiB"
    )
    assert noop_errors == [] and errors == []
    assert len(latencies) == SESSIONS * CALLS
    assert max(latencies) < CALL_LIMIT
    assert largest_wal <= WAL_LIMIT
