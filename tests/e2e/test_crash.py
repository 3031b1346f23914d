"""Crash: a server killed with SIGKILL mid-write loses no acknowledged write and restarts clean.

Each trial starts `memvm serve` over streamable HTTP on one database file, has four clients write
through it (remember, ingest, record_tool_outcome), kills it at a random moment, then restarts it
and checks the file: every write a client saw acknowledged is there, and SQLite's and FTS5's
integrity checks pass. The file is kept across trials, so each restart recovers from the last kill.
"""

import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.test_http import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TRIALS = 20
WRITERS = 4
RESTART_LIMIT = 5.0  # seconds from spawn to the first answered tool call after a kill
START_LIMIT = 60.0  # a cold first start on a loaded 2-core machine


def spawn(db: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "memvm.server", "serve", "--transport", "streamable-http"]
    return subprocess.Popen(
        [*command, "--port", str(port), "--db", str(db)],
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


class Acked:
    """What the clients saw acknowledged, to look for in the file afterwards."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.page_ids: set[str] = set()
        self.call_ids: set[int] = set()

    def __len__(self) -> int:
        return len(self.keys) + len(self.page_ids) + len(self.call_ids)


async def write_until_killed(url: str, writer: str, acked: Acked) -> None:
    """Write in a loop, recording each acknowledged write, until the connection dies."""
    try:
        async with (
            httpx2.AsyncClient(timeout=10) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            for n in range(10_000):
                kind = n % 3
                if kind == 0:
                    key = f"{writer}-{n}-{random.getrandbits(32):08x}"
                    result = await client.call_tool(
                        "remember", {"content": f"note {key} about pumps", "key": key}
                    )
                    if not result.is_error:
                        acked.keys.add(key)
                elif kind == 1:
                    messages = [{"role": "user", "content": f"{writer} says {n}"}]
                    result = await client.call_tool("ingest", {"messages": messages, "session": writer})
                    if not result.is_error:
                        acked.page_ids.update(result.structured_content["page_ids"])
                else:
                    call = {
                        "tool": "get_rate",
                        "args": {"n": n},
                        "outcome": "success",
                        "result": n,
                        "session": writer,
                    }
                    result = await client.call_tool("record_tool_outcome", call)
                    if not result.is_error:
                        acked.call_ids.add(result.structured_content["call_id"])
    except (
        OSError,
        httpx2.HTTPError,
        MCPError,
        ExceptionGroup,
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
    ):
        return  # the server was killed: whatever was not acknowledged may or may not be there


def check_file(db: Path, acked: Acked) -> tuple[int, bool]:
    """How many acknowledged writes are missing, and whether both integrity checks pass."""
    with sqlite3.connect(db) as conn:
        pages = {row[0] for row in conn.execute("SELECT page_id FROM pages")}
        calls = {row[0] for row in conn.execute("SELECT call_id FROM tool_calls")}
        sound = conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        try:
            conn.execute("INSERT INTO pages_fts (pages_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError:
            sound = False
    lost = len(acked.keys - pages) + len(acked.page_ids - pages) + len(acked.call_ids - calls)
    return lost, sound


async def test_sigkill_mid_write_loses_no_acknowledged_write(tmp_path, report_figure):
    db = tmp_path / "crash.db"
    rng = random.Random(2026)
    acked = Acked()
    lost = corrupt = 0
    restarts: list[float] = []
    for trial in range(TRIALS):
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        server = spawn(db, port)
        try:
            took = await first_answer(url, server, START_LIMIT if trial == 0 else RESTART_LIMIT)
            if trial:
                restarts.append(took)
            async with anyio.create_task_group() as writers:
                for w in range(WRITERS):
                    writers.start_soon(write_until_killed, url, f"w{w}", acked)
                await anyio.sleep(rng.uniform(0.2, 1.5))
                server.kill()  # SIGKILL: no shutdown code runs
        finally:
            server.kill()
            server.wait(timeout=30)
        missing, sound = check_file(db, acked)
        lost += missing
        corrupt += not sound
    report_figure(
        f"crash: trials={TRIALS} acked={len(acked)} lost={lost} corrupt={corrupt} max_restart_s={max(restarts):.2f}"
    )
    assert len(acked) > TRIALS * WRITERS  # the clients really wrote between kills
    assert (lost, corrupt) == (0, 0)
    assert max(restarts) < RESTART_LIMIT
