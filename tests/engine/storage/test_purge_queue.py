"""One purge at a time, shared by the callers that asked before it started."""

import anyio
import pytest
from memvm.engine.storage.purge_queue import PurgeQueue

pytestmark = pytest.mark.anyio


async def test_callers_that_ask_while_a_purge_runs_share_the_next_one():
    queue, started, release = PurgeQueue(), [], anyio.Event()

    async def purge() -> bool:
        started.append(len(started) + 1)
        if len(started) == 1:
            await release.wait()
        return True

    answers = []

    async def ask() -> None:
        answers.append(await queue.run(purge))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()  # the first purge is running
        for _ in range(5):
            group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        release.set()
    # The first caller's purge, then one for the five that asked while it ran.
    assert started == [1, 2] and answers == [True] * 6


async def test_a_purge_that_raises_covers_nobody_and_the_next_caller_runs_its_own():
    queue, runs = PurgeQueue(), []

    async def failing() -> bool:
        runs.append("failed")
        raise OSError("disk gone")

    async def working() -> bool:
        runs.append("ran")
        return True

    with pytest.raises(OSError):
        await queue.run(failing)
    assert await queue.run(working) is True
    assert runs == ["failed", "ran"]
