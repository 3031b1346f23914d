"""One runtime per process: connections share its engine, and one leaving closes nothing."""

import anyio
import pytest
from mcp import Client
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings

pytestmark = pytest.mark.anyio


async def hold(server, leave: anyio.Event, left: anyio.Event, *, task_status) -> None:
    """A client connected until `leave` is set; `left` is set once it has disconnected."""
    try:
        async with Client(server, mode="legacy") as client:
            task_status.started(client)
            await leave.wait()
    finally:
        left.set()


async def test_connections_share_one_engine_and_one_leaving_closes_nothing_for_the_rest(db_path):
    server = build_server(ServerSettings(db=str(db_path)))
    leave_first, left_first, leave_second, left_second = (anyio.Event() for _ in range(4))
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            await group.start(hold, server, leave_first, left_first)
            engine = server.runtimes.runtime.engine
            second = await group.start(hold, server, leave_second, left_second)
            shared = server.runtimes.runtime.engine is engine
            leave_first.set()
            await left_first.wait()
            manifest = await second.read_resource("memvm://current/manifest")
            rules = await second.get_prompt("vm_rules", {"mode": "relaxed"})
            leave_second.set()
    assert shared
    assert '"session":"default"' in manifest.contents[0].text.replace(" ", "")
    assert rules.messages
    with pytest.raises(RuntimeError, match="not running"):
        server.runtimes.runtime  # noqa: B018  # the last one out closed it


async def test_a_process_wide_hold_keeps_the_engine_open_between_connections(db_path):
    server = build_server(ServerSettings(db=str(db_path)))
    with anyio.fail_after(60):
        async with server.runtimes.using() as held:
            async with Client(server, mode="legacy") as client:
                await client.read_resource("memvm://current/manifest")
            async with Client(server, mode="legacy") as client:
                await client.read_resource("memvm://current/manifest")
                engine = server.runtimes.runtime.engine
    assert engine is held.engine
