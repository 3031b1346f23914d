"""Scale-out on PostgreSQL: three `memvm serve --transport streamable-http` processes on one
database, clients spread over them, behave as one server.

Every write is acknowledged once and stored once, whichever process took it; what one process
stored, every other one serves; a client whose requests land on a different process each time
(as behind a load balancer without sticky sessions) works as with one; and a client listening on
one process hears the working-set changes that clients of another process make.
"""

import itertools
import random
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourceUpdated

from tests.conftest import db_rows, fresh_postgres_database
from tests.e2e.test_http import START_LIMIT, http_server
from tests.e2e.writes import Acked, write

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PROCESSES = 3
WRITERS = 3
WRITES = 30
SERVE = ("--tools", "all")


class RoundRobin(httpx2.AsyncBaseTransport):
    """Each request to the next process in turn: no request finds the process of the one before."""

    def __init__(self, urls: list[str]) -> None:
        self._ports = itertools.cycle([urlsplit(url).port for url in urls])
        self._inner = httpx2.AsyncHTTPTransport()
        self.sent = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = next(self._ports)
        request.url = request.url.copy_with(port=port)
        # As a load balancer forwards it: each process accepts its own address as the Host.
        request.headers["Host"] = f"127.0.0.1:{port}"
        self.sent += 1
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def connected(url: str, transport: httpx2.AsyncBaseTransport | None = None) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60, transport=transport) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def ok(client: Client, name: str, /, **arguments) -> dict:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content or {})


async def test_three_processes_on_one_postgresql_database_behave_as_one(postgres, report_figure):
    db = fresh_postgres_database(postgres)
    acked = Acked()
    with ExitStack() as stack:
        urls = [stack.enter_context(http_server(db, None, *SERVE)) for _ in range(PROCESSES)]
        with anyio.fail_after(START_LIMIT * 4):
            # Writers spread over the processes, all at once.
            async with anyio.create_task_group() as group:
                for p, url in enumerate(urls):
                    for w in range(WRITERS):
                        group.start_soon(write, url, f"p{p}w{w}", acked, WRITES)

            # What any process stored, every process serves.
            sample = random.Random(7).sample(sorted(acked.keys), 12)
            served = 0
            for url in urls:
                async with connected(url) as client:
                    for key in sample:
                        page = await client.read_resource(f"memvm://pages/{key}")
                        served += key in page.contents[0].text

            # A client whose every request goes to the next process.
            rotation = RoundRobin(urls)
            async with connected(urls[0], rotation) as client:
                stored = await ok(
                    client, "remember", content="The heron cluster deploys on Fridays.", key="heron"
                )
                found = await ok(client, "search_pages", query="heron cluster deploys")
                fault = await ok(client, "page_fault", page_id="heron", target_level=0)
                calls = [
                    (await ok(client, "record_tool_outcome", tool="t", args={"n": n}, outcome="success"))[
                        "call_id"
                    ]
                    for n in range(6)
                ]

            # Listening on the first process, changes made through the second.
            heard: list[str] = []
            watched = "memvm://sessions/watch/working-set"
            async with (
                connected(urls[0]) as listener,
                connected(urls[1]) as writer,
                listener.listen(resource_subscriptions=[watched]) as stream,
            ):
                await ok(
                    writer,
                    "remember",
                    content="a note the watch session maps",
                    key="watched",
                    session="watch",
                )
                await ok(writer, "page_fault", page_id="watched", target_level=0, session="watch")
                with anyio.fail_after(START_LIMIT):
                    while watched not in heard:
                        event = await stream.__anext__()
                        if isinstance(event, ResourceUpdated):
                            heard.append(event.uri)

    pages = {row[0] for row in db_rows(db, "SELECT page_id FROM pages")}
    call_ids = [
        row[0]
        for row in db_rows(db, "SELECT call_id FROM tool_calls WHERE namespace = 'default' ORDER BY call_id")
    ]
    lost = len(acked.keys - pages) + len(acked.page_ids - pages) + len(acked.call_ids - set(call_ids))
    report_figure(
        f"scale_out: procs={PROCESSES} writes={len(acked)} lost={lost} errors={len(acked.errors)} "
        f"duplicated_call_ids={len(call_ids) - len(set(call_ids))} served_elsewhere={served}/{len(sample) * PROCESSES} "
        f"round_robin_requests={rotation.sent} heard_across={len(heard)}"
    )
    assert acked.errors == []
    assert len(acked) == PROCESSES * WRITERS * WRITES
    assert lost == 0
    assert call_ids == list(range(1, len(call_ids) + 1))  # nothing given twice, nothing skipped
    assert served == len(sample) * PROCESSES
    assert stored["page_id"] == "heron" and found["results"][0]["page_id"] == "heron"
    assert "Fridays" in fault["content"] and calls == sorted(calls) and len(set(calls)) == 6
    assert rotation.sent >= 9  # the requests really went round all three
    assert watched in heard
