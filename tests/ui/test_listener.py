"""The view's listening socket, as asyncio serves it: answers leave at once on a kept-alive
connection (Nagle off), rather than waiting for the browser's delayed acknowledgement."""

import asyncio
import socket

import pytest
from memvm.ui.cli import listen


@pytest.mark.anyio
async def test_connections_accepted_by_the_view_send_without_nagle_delay():
    listener = listen("127.0.0.1", 0)
    seen: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=listener)
    async with server:
        port = listener.getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await reader.read()  # the server closes once it has looked
        writer.close()
    assert seen and seen[0] != 0
