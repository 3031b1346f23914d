"""The real HTTP server under a crowd: the session table, SSE connections, and half-sent requests."""

import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.sse import sse_client
from memvm.engine.config import EngineConfig
from memvm.server.session_quota import SESSIONS_PER_NAMESPACE
from memvm.ui.http_guard import HEADER_TIMEOUT_S
from memvm.ui.log_flood import BURST

from tests.e2e.test_http import ALICE, BOB, INITIALIZE, START_LIMIT, free_port, http_server, wait_listening

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


async def open_session(http: httpx2.AsyncClient, url: str, token: str) -> tuple[int, str | None]:
    opened = await http.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})
    return opened.status_code, opened.headers.get("mcp-session-id")


async def ping(http: httpx2.AsyncClient, url: str, token: str, session_id: str) -> int:
    headers = {**HEADERS, "Authorization": f"Bearer {token}", "Mcp-Session-Id": session_id}
    return (await http.post(url, json=PING, headers=headers)).status_code


async def test_one_token_cannot_fill_the_session_table_for_the_others(db_path, tokens, report_figure):
    opened = SESSIONS_PER_NAMESPACE * 3
    with http_server(db_path, tokens) as url, anyio.fail_after(START_LIMIT * 4):
        async with httpx2.AsyncClient(timeout=60) as http:
            alice = [await open_session(http, url, ALICE) for _ in range(opened)]
            other_status, bob_session = await open_session(http, url, BOB)
            ids = [session_id for _, session_id in alice]
            still_open = [session_id for session_id in ids if await ping(http, url, ALICE, session_id) == 200]
            bob_ping = await ping(http, url, BOB, bob_session or "")
    report_figure(
        f"session_table: opened={opened} kept={len(still_open)} limit={SESSIONS_PER_NAMESPACE} "
        f"other_tenant={other_status}"
    )
    assert all(status == 200 and session_id for status, session_id in alice)
    assert other_status == 200 and bob_ping == 200
    # The tenant keeps its most recent sessions; the least recently used ones were ended for them.
    assert len(still_open) == SESSIONS_PER_NAMESPACE
    assert still_open == ids[-SESSIONS_PER_NAMESPACE:]


async def test_sessions_opened_at_once_under_the_limit_all_stay_open(db_path, tokens, report_figure):
    at_once = SESSIONS_PER_NAMESPACE - 1
    with http_server(db_path, tokens) as url, anyio.fail_after(START_LIMIT * 4):
        async with httpx2.AsyncClient(timeout=60) as http:
            opened: list[tuple[int, str | None]] = []

            async def one() -> None:
                opened.append(await open_session(http, url, ALICE))

            async with anyio.create_task_group() as group:
                for _ in range(at_once):
                    group.start_soon(one)
            ids = [session_id for _, session_id in opened]
            answering = [
                session_id for session_id in ids if await ping(http, url, ALICE, session_id or "") == 200
            ]
    report_figure(f"session_table_at_once: opened={at_once} answering={len(answering)}")
    # A session that has answered its initialize counts once, not also as one still opening.
    assert all(status == 200 for status, _ in opened)
    assert len(answering) == at_once


def open_database_files(db: Path) -> int:
    """How many file descriptors, in any process, have this database file open."""
    target = str(db.resolve())
    count = 0
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            count += sum(1 for fd in fd_dir.iterdir() if os.readlink(fd) == target)
        except OSError:  # a process that ended, or one we may not look into
            continue
    return count


async def hold_sse_client(
    url: str, token: str, leave: anyio.Event, left: anyio.Event, *, task_status: TaskStatus[Client]
) -> None:
    """One SSE client, connected until `leave` is set; `left` is set once it has disconnected."""
    try:
        async with Client(
            sse_client(url, headers={"Authorization": f"Bearer {token}"}), mode="legacy"
        ) as client:
            task_status.started(client)
            await leave.wait()
    finally:
        left.set()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc")
async def test_sse_clients_share_one_engine_and_outlive_each_others_disconnects(
    db_path, tokens, report_figure
):
    clients, leaving = 8, 4
    failures: list[str] = []
    with http_server(db_path, tokens, transport="sse") as url, anyio.fail_after(START_LIMIT * 4):
        async with anyio.create_task_group() as group:
            held = []
            for index in range(clients):
                leave, left = anyio.Event(), anyio.Event()
                token = ALICE if index % 2 else BOB
                client = await group.start(hold_sse_client, url, token, leave, left)
                held.append((client, leave, left))
                await client.read_resource("memvm://current/manifest")  # the engine opens what reads need
                if index == 0:
                    with_one = open_database_files(db_path)
            with_all = open_database_files(db_path)
            # Clients leave one by one, the last connected first; each time, the others read on.
            for gone in range(1, leaving + 1):
                _, leave, left = held.pop()
                leave.set()
                await left.wait()
                for client, _, _ in held:
                    try:
                        await client.read_resource("memvm://current/manifest")
                        await client.get_prompt("vm_rules", {"mode": "relaxed"})
                    except Exception as exc:  # a client that stayed and was not served counts
                        failures.append(f"after {gone} left: {exc}")
            after = open_database_files(db_path)
            for _, leave, _ in held:
                leave.set()
    # One engine holds its writer and at most `read_connections` readers open, however many clients
    # share it: readers open as reads overlap (a client's beside the embedder's), never per client.
    one_engine = 1 + EngineConfig().read_connections
    report_figure(
        f"sse: clients={clients} disconnects={leaving} files_with_one={with_one} with_all={with_all} "
        f"after={after} failures={len(failures)}"
    )
    assert failures == []
    assert 0 < with_one <= with_all <= one_engine and after <= one_engine


# The server's file limit in the half-sent-requests test: low enough that the sockets outnumber it.
SERVER_FILE_LIMIT = 512


@contextmanager
def limited_server(db: Path, tokens: Path, log: Path, file_limit: int) -> Iterator[int]:
    """`memvm serve` over streamable HTTP with at most `file_limit` open files; yields its port."""
    port = free_port()

    def lower_the_file_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (file_limit, file_limit))

    command = [sys.executable, "-m", "memvm.server", "serve", "--transport", "streamable-http"]
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*command, "--port", str(port), "--tokens", str(tokens), "--db", str(db)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=lower_the_file_limit,
        )
        try:
            wait_listening(process, port, log)
            yield port
        finally:
            process.terminate()
            process.wait(timeout=30)


async def half_sent_request(port: int, closed: list[int], *, task_status: TaskStatus[None]) -> None:
    """A request that stops in the middle of its headers and never goes on; notes when the server hangs up."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Ty".encode())
        task_status.started()
        try:
            while await stream.receive():
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
            pass
        closed.append(port)


async def test_half_sent_requests_are_cut_off_and_lock_no_one_out(db_path, tokens, tmp_path, report_figure):
    sockets = 400
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > sockets * 2, "this test needs more open files"
    log = tmp_path / "server.log"
    closed: list[int] = []
    with limited_server(db_path, tokens, log, SERVER_FILE_LIMIT) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(START_LIMIT + HEADER_TIMEOUT_S * 4):
            async with anyio.create_task_group() as group:
                for _ in range(sockets):
                    await group.start(half_sent_request, port, closed)
                # With every socket still hanging, a client that sends whole requests is served.
                async with httpx2.AsyncClient(timeout=60) as http:
                    good, _ = await open_session(http, url, ALICE)
                # Each of these makes the server log a warning.
                for _ in range(BURST * 5):
                    async with await anyio.connect_tcp("127.0.0.1", port) as garbage:
                        await garbage.send(b"NOT HTTP\r\n\r\n")
                        await garbage.receive()
                # The group ends once the server has closed every half-sent request.
    log_bytes = log.stat().st_size
    invalid = log.read_text().count("Invalid HTTP request")
    report_figure(
        f"slowloris: sockets={sockets} file_limit={SERVER_FILE_LIMIT} closed_by_server={len(closed)} "
        f"good_client={good} log_bytes={log_bytes} invalid_logged={invalid}/{BURST * 5}"
    )
    assert good == 200
    assert len(closed) == sockets
    # Every kind of line the server logs appears at most BURST times, so the log stays small.
    assert invalid <= BURST
    assert log_bytes < 50 * 1024
