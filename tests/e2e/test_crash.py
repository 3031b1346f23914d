"""Crash: a server killed with SIGKILL mid-write loses no acknowledged write and restarts clean.

Each trial starts `memvm serve` over streamable HTTP on one database file, has four clients write
through it (remember, ingest, record_tool_outcome), kills it at a random moment, then restarts it
and checks the file: every write a client saw acknowledged is there, and SQLite's and FTS5's
integrity checks pass. The file is kept across trials, so each restart recovers from the last kill.
How long each restart took to answer is a figure on the printed line, held only to a minute: on a
shared machine it says more about the neighbours than about memvm.
"""

import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_http import free_port
from tests.e2e.writes import Acked, check_file, write_until_killed

# Twenty kills and restarts: about a minute here, a few on a loaded machine.
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]

# Twenty on SQLite, whose file and full-text index a kill could tear (docs/testing.md). On
# PostgreSQL a kill ends a client of the database server, never the server: what is checked there
# is that memvm acknowledges a write only once committed, and that its search statistics agree with
# its pages, for which ten kills do.
TRIALS = {"sqlite": 20, "postgresql": 10}
WRITERS = 4
# Seconds from spawn to the first answered tool call: a sanity bound for a loaded 2-core machine.
START_LIMIT = 60.0


def spawn(db: Path | str, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "memvm.server", "serve", "--transport", "streamable-http"]
    return subprocess.Popen(
        [*command, "--tools", "all", "--port", str(port), "--db", str(db)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def first_answer(url: str, process: subprocess.Popen[bytes], limit: float) -> float:
    """Seconds until the server answers a tool call (polled); fails if it exits or takes too long."""
    start = time.monotonic()
    while True:
        assert process.poll() is None, "the server exited while starting"
        try:
            async with (
                httpx2.AsyncClient(timeout=10) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                result = await client.call_tool("search_pages", {"query": "anything"})
                assert not result.is_error
                return time.monotonic() - start
        except (OSError, httpx2.HTTPError, ExceptionGroup):
            assert time.monotonic() - start < limit, f"no answer within {limit} s"
            await anyio.sleep(0.05)


async def test_sigkill_mid_write_loses_no_acknowledged_write(db_url, backend, report_figure):
    db = db_url
    rng = random.Random(2026)
    acked = Acked()
    lost = corrupt = 0
    restarts: list[float] = []
    trials = TRIALS[backend]
    for trial in range(trials):
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        server = spawn(db, port)
        try:
            took = await first_answer(url, server, START_LIMIT)
            if trial:
                restarts.append(took)
            before = len(acked)
            async with anyio.create_task_group() as writers:
                for w in range(WRITERS):
                    writers.start_soon(write_until_killed, url, f"w{w}", acked)
                # Killed mid-write at a random moment once the writers are under way, however slow
                # a busy machine makes their first writes (within a generous bound).
                for _ in range(int(START_LIMIT / 0.05)):
                    if len(acked) - before >= WRITERS:
                        break
                    await anyio.sleep(0.05)
                await anyio.sleep(rng.uniform(0.0, 1.0))
                server.kill()  # SIGKILL: no shutdown code runs
        finally:
            server.kill()
            server.wait(timeout=30)
        missing, sound = check_file(db, acked)
        lost += missing
        corrupt += not sound
    report_figure(
        f"crash: backend={backend} trials={trials} acked={len(acked)} lost={lost} corrupt={corrupt} "
        f"restart_s_p50={statistics.median(restarts):.2f} max_restart_s={max(restarts):.2f}"
    )
    assert len(acked) > trials * WRITERS  # the clients really wrote between kills
    assert acked.page_ids and acked.call_ids and acked.keys  # all three kinds of write
    assert acked.errors == []
    assert (lost, corrupt) == (0, 0)
