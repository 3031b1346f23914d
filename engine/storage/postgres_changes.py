"""Changes heard across processes on PostgreSQL: a process that changes a namespace NOTIFYs the
others, and each LISTENs on a connection of its own, so that a subscriber of another process
(a resource, the browser view) hears of a change it did not make.
"""

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import anyio
import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

logger = logging.getLogger("memvm.storage")

_CHANNEL = "memvm_changes"
_RELISTEN_S = 1.0


class ChangeChannel:
    def __init__(self, pool: AsyncConnectionPool[Any], target: str, connect_timeout_s: int) -> None:
        self._pool = pool
        self._target = target
        self._connect_timeout_s = connect_timeout_s
        # Who announced a change: a process ignores its own, which it has delivered already.
        self._origin = secrets.token_hex(8)
        self._listener: asyncio.Task[None] | None = None
        self._closed = False

    async def announce(self, namespace: str, change: str) -> None:
        """NOTIFY the other processes; best effort, as the change itself is already committed."""
        payload = json.dumps({"o": self._origin, "n": namespace, "c": change})
        try:
            async with self._pool.connection() as conn:
                await conn.execute("SELECT pg_notify(%s, %s)", (_CHANNEL, payload))
        except (psycopg.Error, PoolTimeout):
            logger.warning("could not announce a change to other processes", exc_info=True)

    def listen(self, deliver: Callable[[str, str], Awaitable[None]]) -> None:
        """LISTEN on a connection of its own, until `close`."""
        if self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen(deliver))

    async def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            with anyio.CancelScope(shield=True), suppress(asyncio.CancelledError):
                await self._listener

    async def _listen(self, deliver: Callable[[str, str], Awaitable[None]]) -> None:
        while not self._closed:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._target, autocommit=True, connect_timeout=self._connect_timeout_s
                )
                async with conn:
                    await conn.execute(f"LISTEN {_CHANNEL}")
                    async for notice in conn.notifies():
                        await _delivered(notice.payload, self._origin, deliver)
            except psycopg.Error:
                # The server restarted or dropped the connection: listen again after a pause
                # (announcements meanwhile are lost; a subscriber re-reads on the next one).
                logger.warning("lost the connection that hears other processes; reconnecting", exc_info=True)
                await asyncio.sleep(_RELISTEN_S)


async def _delivered(payload: str, origin: str, deliver: Callable[[str, str], Awaitable[None]]) -> None:
    try:
        message = json.loads(payload)
        if message["o"] == origin:
            return
        await deliver(str(message["n"]), str(message["c"]))
    except (ValueError, KeyError, TypeError):
        logger.warning("ignored a malformed change announcement")
    except Exception:
        # A subscriber's failure must not stop this process hearing the next change.
        logger.exception("delivering another process's change failed")
