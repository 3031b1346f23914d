"""End to end: what a tool call costs through a real client, and how long a server takes to start.

    .venv/bin/python tests/bench/e2e.py [--calls 300] [--pages 2000] [--starts 10] [--out FILE]

Over stdio and streamable HTTP (127.0.0.1), the official MCP client calls page_fault,
search_pages and the guard tools on memvm's server, and `noop`, a tool that does nothing, on the
same server in the same run (`noop_server.py`): a tool's p50 minus noop's is what memvm adds to a
call. The database first gets `--pages` pages through the `ingest` tool. Start-up is the time
from spawning the process to the first tool result over stdio: `memvm serve` answering
search_pages, against a bare MCPServer answering noop.
"""

import argparse
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from measure import summary
from synthetic import Corpus

HERE = Path(__file__).resolve().parent
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=list(args), cwd=str(HERE), env=ENV)


@asynccontextmanager
async def over_stdio(db: Path) -> AsyncIterator[Client]:
    async with Client(stdio("noop_server.py", str(db), "stdio")) as client:
        yield client


@asynccontextmanager
async def over_http(db: Path) -> AsyncIterator[Client]:
    port = free_port()
    process = subprocess.Popen(  # noqa: ASYNC220 - started once, before anything is timed
        [sys.executable, "noop_server.py", str(db), "streamable-http", str(port)],
        cwd=HERE,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP server did not start") from None
                await anyio.sleep(0.1)
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
        ):
            yield client
    finally:
        process.terminate()
        process.wait(timeout=30)


async def checked(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return result


async def fill(client: Client, corpus: Corpus, pages: int) -> None:
    for start in range(0, pages, 50):
        messages = [
            {"role": "user" if (start + i) % 2 == 0 else "assistant", "content": corpus.message()}
            for i in range(min(50, pages - start))
        ]
        await checked(client, "ingest", {"messages": messages, "session": f"conv-{start // 200}"})


# A tool call: the tool, its arguments, and a call to make first, untimed (or None).
Call = tuple[str, dict[str, Any], tuple[str, dict[str, Any]] | None]


async def latencies(client: Client, calls: int, pages: int) -> dict[str, dict[str, float]]:
    corpus, rng = Corpus(seed=99), random.Random(5)
    await checked(client, "bind_value", {"tool": "get_rate", "args": {"pair": "EUR/USD"}, "value": 1.0842})
    arguments = {"amount": 1234.5, "order": {"lines": [{"qty": 3, "price": "$19.99"}]}, "note": "pay $v1"}

    faults = itertools.count()

    def page_fault(_: int) -> Call:
        # A fresh session every three faults, whose turn the host starts (untimed): a session no
        # host started would charge its faults to the server's own, whose allowance of three a
        # turn would then run out.
        number = next(faults)
        session = f"agent-{number // 3}"
        page_id = f"msg_{rng.randint(1, pages):06d}"
        turn = ("begin_turn", {"session": session}) if number % 3 == 0 else None
        return "page_fault", {"page_id": page_id, "target_level": rng.randrange(4), "session": session}, turn

    guarded = itertools.count()

    def check_tool_call(index: int) -> Call:
        # Ten calls a turn, in a session of their own, as the scale benchmark checks them.
        number = next(guarded)
        session = f"guard-{number // 10}"
        turn = ("begin_turn", {"session": session}) if number % 10 == 0 else None
        return (
            "check_tool_call",
            {"tool": "convert", "args": {"amount": "$v1", "fee": index}, "session": session},
            turn,
        )

    workload: dict[str, Callable[[int], Call]] = {
        "noop": lambda i: ("noop", {}, None),
        "page_fault": page_fault,
        "search_pages": lambda i: ("search_pages", {"query": corpus.query(), "limit": 5}, None),
        "bind_value": lambda i: (
            "bind_value",
            {"tool": "get_rate", "args": {"n": i}, "value": i + 0.5},
            None,
        ),
        "check_ungrounded": lambda i: ("check_ungrounded", {"tool": "convert", "args": arguments}, None),
        "check_tool_call": check_tool_call,
    }
    figures = {}
    for name, make in workload.items():
        durations = []
        # The first five calls warm up (they load code paths and caches) and are not timed.
        for index in range(-5, calls):
            tool, args, before = make(index)
            if before is not None:
                await checked(client, *before)
            start = time.perf_counter()
            await checked(client, tool, args)
            if index >= 0:
                durations.append(time.perf_counter() - start)
        figures[name] = summary(durations)
    return figures


async def first_result_seconds(args: list[str], tool: str, arguments: dict[str, Any]) -> float:
    start = time.perf_counter()
    async with Client(stdio(*args)) as client:
        await checked(client, tool, arguments)
        return time.perf_counter() - start


async def run(calls: int, pages: int, starts: int, folder: Path) -> dict[str, Any]:
    db = folder / "e2e.db"
    result: dict[str, Any] = {"calls": calls, "pages": pages}
    async with over_stdio(db) as client:
        await fill(client, Corpus(), pages)
        result["stdio"] = await latencies(client, calls, pages)
    async with over_http(db) as client:
        result["streamable-http"] = await latencies(client, calls, pages)
    memvm = ["-m", "memvm.server", "serve", "--db", str(db)]
    result["startup"] = {
        "memvm": summary(
            [await first_result_seconds(memvm, "search_pages", {"query": "report"}) for _ in range(starts)]
        ),
        "minimal MCPServer": summary(
            [
                await first_result_seconds(["noop_server.py", "minimal", "stdio"], "noop", {})
                for _ in range(starts)
            ]
        ),
    }
    return result


def print_table(result: dict[str, Any]) -> None:
    print(f"\n{'transport':<16} {'tool':<18} {'p50 ms':>8} {'p95 ms':>8} {'memvm adds (p50 - noop p50)':>28}")
    for transport in ("stdio", "streamable-http"):
        noop = result[transport]["noop"]["p50_ms"]
        for tool, figures in result[transport].items():
            added = "—" if tool == "noop" else f"{figures['p50_ms'] - noop:+.2f} ms"
            print(
                f"{transport:<16} {tool:<18} {figures['p50_ms']:>8.2f} {figures['p95_ms']:>8.2f} {added:>28}"
            )
    for server, figures in result["startup"].items():
        print(
            f"start to first result, {server}: median {figures['p50_ms']:.0f} ms, p95 {figures['p95_ms']:.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per tool and transport")
    parser.add_argument("--pages", type=int, default=2000, help="pages ingested before timing")
    parser.add_argument("--starts", type=int, default=10, help="process starts timed per server")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "e2e.json")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        result = anyio.run(run, options.calls, options.pages, options.starts, Path(folder))
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(result, indent=2))
    print_table(result)
    stdio_noop, http_noop = result["stdio"]["noop"]["p50_ms"], result["streamable-http"]["noop"]["p50_ms"]
    print(
        f"e2e stdio_search_p50_ms={result['stdio']['search_pages']['p50_ms']:.2f} stdio_noop_p50_ms={stdio_noop:.2f} "
        f"http_search_p50_ms={result['streamable-http']['search_pages']['p50_ms']:.2f} http_noop_p50_ms={http_noop:.2f} "
        f"startup_ms={result['startup']['memvm']['p50_ms']:.0f} minimal_startup_ms={result['startup']['minimal MCPServer']['p50_ms']:.0f}"
    )


if __name__ == "__main__":
    main()
