"""The real server over streamable HTTP, with bearer tokens: two tenants, one process or two."""

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

# The two-tenant test stays in the fast stage: one real HTTP server there; the rest run with the
# end-to-end stage.
pytestmark = pytest.mark.anyio

START_LIMIT = 60
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef0000"
# The first request of a handshake-era HTTP session, sent raw.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(process: subprocess.Popen, port: int, log: Path | None = None) -> None:
    """Until the server accepts connections; fails with its stderr if it exits first."""
    deadline = time.monotonic() + START_LIMIT
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if process.poll() is not None:
                stderr = log.read_bytes() if log else process.stderr.read()
                raise AssertionError(stderr.decode()[-2000:]) from None
            assert time.monotonic() < deadline, "the server did not start listening"
            time.sleep(0.1)


@contextmanager
def http_server(
    db: Path | str,
    tokens: Path | None,
    *extra: str,
    transport: str = "streamable-http",
    log: Path | None = None,
) -> Iterator[str]:
    """`memvm serve` over an HTTP transport on a free loopback port; yields its URL.

    Without `tokens` every client is in the default namespace. With `log`, stderr goes to that
    file (a pipe nobody reads would stall a server that logs much).
    """
    port = free_port()
    command = [sys.executable, "-m", "memvm.server", "serve", "--transport", transport, "--port", str(port)]
    if tokens:
        command += ["--tokens", str(tokens)]
    with ExitStack() as stack:
        stderr = stack.enter_context(log.open("wb")) if log else subprocess.PIPE
        process = subprocess.Popen(
            [*command, "--db", str(db), *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_listening(process, port, log)
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    finally:
        process.terminate()
        process.wait(timeout=30)


@asynccontextmanager
async def client(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as connected,
    ):
        yield connected


async def call(connected: Client, tool: str, **arguments):
    result = await connected.call_tool(tool, arguments)
    return (
        result.is_error,
        (result.structured_content or {}),
        result.content[0].text if result.content else "",
    )


async def remember_many(url: str, token: str, topic: str, count: int) -> None:
    """One client writing `count` notes about `topic`, each acknowledged before the next."""
    async with client(url, token) as connected:
        for item in range(count):
            error, _, text = await call(connected, "remember", content=f"note {item} about {topic}")
            assert not error, text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.above_storage  # tokens kept apart on both backends: tests/e2e/test_isolation.py
async def test_a_second_token_never_sees_the_first_tokens_memory(db_url, tokens, mode):
    with http_server(db_url, tokens) as url, anyio.fail_after(START_LIMIT * 2):
        async with client(url, ALICE, mode) as alice:
            await call(alice, "remember", content="The vault code is 4417, kept by otters.", key="vault")
            _, mine, _ = await call(alice, "search_pages", query="vault otters")
        async with client(url, BOB, mode) as bob:
            probes = [
                await call(bob, "search_pages", query=query)
                for query in ("vault otters", "content: otters", "pages_fts: vault", "* OR vault", "vault")
            ]
            foreign = await call(bob, "page_fault", page_id="vault")
            missing = await call(bob, "page_fault", page_id="vaulx")
            other_session = await call(bob, "search_pages", query="vault", scope="session", session="default")
            manifest = await bob.read_resource("memvm://current/manifest")
    assert [hit["page_id"] for hit in mine["results"]] == ["vault"]
    assert all(not error and found["results"] == [] for error, found, _ in probes)
    assert other_session[1]["results"] == []
    assert foreign[0] and missing[0]
    assert foreign[2].replace("vault", "ID") == missing[2].replace("vaulx", "ID")
    assert "vault" not in manifest.contents[0].text


@pytest.mark.slow
@pytest.mark.above_storage  # tokens kept apart on both backends: tests/e2e/test_isolation.py
async def test_reading_a_foreign_page_resource_answers_like_a_missing_page(db_url, tokens):
    with http_server(db_url, tokens) as url, anyio.fail_after(START_LIMIT * 2):
        async with client(url, ALICE) as alice:
            await call(alice, "remember", content="Alice's private note.", key="private")
        async with client(url, BOB) as bob:
            errors = []
            for uri in ("memvm://pages/private", "memvm://pages/absent"):
                try:
                    await bob.read_resource(uri)
                    errors.append(None)
                except Exception as exc:  # the client raises the server's error for a failed read
                    errors.append(str(exc))
    assert errors[0] is not None and errors[1] is not None
    assert errors[0].replace("private", "ID") == errors[1].replace("absent", "ID")


@pytest.mark.slow
@pytest.mark.above_storage  # refused before any storage is read
async def test_bad_transport_requests_get_their_http_status(db_url, tokens, report_figure):
    # A valid opening request, so that the one thing wrong with each variant is what is refused.
    opening = INITIALIZE
    huge = {**opening, "padding": "x" * (9 * 1024 * 1024)}  # over the 8 MiB limit
    good = {
        "Authorization": f"Bearer {ALICE}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    with http_server(db_url, tokens) as url:
        async with httpx2.AsyncClient(timeout=60) as http:

            async def status(headers: dict[str, str], body: object = opening) -> int:
                response = await http.post(url, content=json.dumps(body), headers={**good, **headers})
                return response.status_code

            statuses = {
                "host": await status({"Host": "attacker.example:80"}),
                "origin": await status({"Origin": "http://attacker.example"}),
                "content_type": await status({"Content-Type": "text/plain"}),
                "body": await status({}, huge),
                "no_token": await status({"Authorization": ""}),
                "wrong_token": await status({"Authorization": "Bearer wrong-token-000000000000"}),
                "good": await status({}),
            }
    report_figure("transport: " + " ".join(f"{name}={code}" for name, code in statuses.items()))
    assert statuses == {
        "host": 421,
        "origin": 403,
        "content_type": 400,
        "body": 413,
        "no_token": 401,
        "wrong_token": 401,
        "good": 200,
    }


@pytest.mark.slow
@pytest.mark.above_storage  # tokens kept apart on both backends: tests/e2e/test_isolation.py
async def test_reusing_another_tokens_mcp_session_id_gives_no_access_to_its_memory(db_url, tokens):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    initialize = INITIALIZE
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_pages", "arguments": {"query": "otters"}},
    }
    with http_server(db_url, tokens) as url, anyio.fail_after(START_LIMIT * 2):
        async with client(url, ALICE) as alice:
            await call(alice, "remember", content="Otters guard the second vault.", key="otters")
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(
                url, json=initialize, headers={**headers, "Authorization": f"Bearer {ALICE}"}
            )
            session_id = opened.headers.get("mcp-session-id")
            hijack = await http.post(
                url,
                json=search,
                headers={**headers, "Authorization": f"Bearer {BOB}", "Mcp-Session-Id": session_id or ""},
            )
    print("HIJACK", hijack.status_code, hijack.text[:300])
    assert session_id
    assert "Otters guard" not in hijack.text


@pytest.mark.slow
async def test_several_clients_at_once_lose_nothing(db_url, tokens):
    with http_server(db_url, tokens) as url, anyio.fail_after(START_LIMIT * 3):
        async with anyio.create_task_group() as group:
            for index in range(6):
                group.start_soon(remember_many, url, ALICE if index % 2 else BOB, f"kestrels {index}", 10)
        async with client(url, ALICE) as alice, client(url, BOB) as bob:
            _, alice_found, _ = await call(alice, "search_pages", query="kestrels", limit=50)
            _, bob_found, _ = await call(bob, "search_pages", query="kestrels", limit=50)
    assert len(alice_found["results"]) == 30 and len(bob_found["results"]) == 30


@pytest.mark.slow
@pytest.mark.sqlite_only  # on PostgreSQL: tests/e2e/test_scale_out.py
async def test_two_server_processes_on_one_file_lose_nothing(db_url, tokens):
    with http_server(db_url, tokens) as first, http_server(db_url, tokens) as second:
        with anyio.fail_after(START_LIMIT * 3):
            async with anyio.create_task_group() as group:
                group.start_soon(remember_many, first, ALICE, "herons first", 15)
                group.start_soon(remember_many, second, ALICE, "herons second", 15)
            async with client(second, ALICE) as alice:
                _, found, _ = await call(alice, "search_pages", query="herons", limit=50)
    assert len(found["results"]) == 30


@pytest.mark.slow
@pytest.mark.above_storage  # tokens kept apart on both backends: tests/e2e/test_isolation.py
async def test_the_sse_transport_serves_each_token_its_own_namespace(db_url, tokens):
    with http_server(db_url, tokens, transport="sse") as url, anyio.fail_after(START_LIMIT * 2):
        async with Client(
            sse_client(url, headers={"Authorization": f"Bearer {ALICE}"}), mode="legacy"
        ) as alice:
            await call(alice, "remember", content="Alice keeps the ferry timetable.", key="ferry")
            _, mine, _ = await call(alice, "search_pages", query="ferry timetable")
        async with Client(sse_client(url, headers={"Authorization": f"Bearer {BOB}"}), mode="legacy") as bob:
            _, theirs, _ = await call(bob, "search_pages", query="ferry timetable")
    assert [hit["page_id"] for hit in mine["results"]] == ["ferry"]
    assert theirs["results"] == []
