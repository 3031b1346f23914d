"""Half-sent requests are cut off, and past the connection limit the longest waiting socket goes."""

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
import uvicorn
from anyio.abc import SocketStream
from memvm.ui.http_guard import guarded_protocol

pytestmark = pytest.mark.anyio

LIMIT_S = 30


async def echo_length(scope, receive, send) -> None:
    """Reads the whole body, answers with its length."""
    if scope["type"] != "http":
        return
    length = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        length += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(length).encode()})


@asynccontextmanager
async def guarded_server(**limits: float) -> AsyncIterator[int]:
    """uvicorn with the guarded protocol on a free loopback port; yields the port."""
    # Listening before uvicorn starts: connections wait in the kernel's queue, not on a poll.
    listener = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(echo_length, lifespan="off", log_level="error", http=guarded_protocol(**limits))
    server = uvicorn.Server(config)
    with listener:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listener])
            try:
                yield listener.getsockname()[1]
            finally:
                server.should_exit = True


async def hung_up(stream: SocketStream) -> bool:
    """Reads until the server closes the connection."""
    try:
        while await stream.receive():
            pass
    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
        pass
    return True


async def test_a_request_that_stops_in_its_headers_or_its_body_is_closed(report_figure):
    with anyio.fail_after(LIMIT_S):
        async with guarded_server(max_connections=100, header_timeout_s=0.5, body_timeout_s=0.5) as port:
            headers = await anyio.connect_tcp("127.0.0.1", port)
            await headers.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Le")
            body = await anyio.connect_tcp("127.0.0.1", port)
            await body.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            closed = [await hung_up(headers), await hung_up(body)]
            async with httpx2.AsyncClient() as http:
                whole = await http.post(f"http://127.0.0.1:{port}/", content=b"x" * 100)
    assert closed == [True, True]
    assert (whole.status_code, whole.text) == (200, "100")


async def test_past_the_connection_limit_the_socket_waiting_longest_for_its_headers_is_closed():
    with anyio.fail_after(LIMIT_S):
        async with guarded_server(max_connections=3, header_timeout_s=600) as port:
            waiting = []
            for _ in range(3):
                stream = await anyio.connect_tcp("127.0.0.1", port)
                await stream.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
                waiting.append(stream)
                # Each is counted before the next arrives, so the order of waiting is known.
                async with httpx2.AsyncClient() as http:
                    assert (await http.get(f"http://127.0.0.1:{port}/")).status_code == 200
            oldest_closed = await hung_up(waiting[0])
            # The others were kept: they can still finish their requests.
            await waiting[2].send(b"\r\n")
            answer = await waiting[2].receive()
    assert oldest_closed
    assert answer.startswith(b"HTTP/1.1 200")
