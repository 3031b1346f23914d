"""The view's export downloads: how many run at once, what they may spool, and when one is cut.

An export is read from one snapshot through the engine's own storage (a connection of its pool,
on either backend) into an unnamed temporary file, and streamed from that file after. Reading it
out first ends the read at once: a snapshot held open by a slow download would keep SQLite's
write-ahead log from being checkpointed, and on PostgreSQL would hold a pooled connection and keep
VACUUM from taking out what `forget` deleted. What spooling costs is bounded instead:

- a namespace runs at most `per_namespace` exports at once and the process `per_process`, each
  counted from its request until its download ends; one more is refused (429);
- exports are read out one at a time, so together they hold at most one read connection;
- the spools together hold at most `spool_bytes` and one namespace's at most half of that, so one
  tenant's downloads always leave room for another's; an export that would pass its room stops,
  refused (429 while other exports hold the room, 507 when it alone is larger than a share);
- a download the client has read nothing of for `stall_s` is cut, and its spool freed.
"""

import tempfile
from collections import Counter
from dataclasses import dataclass
from typing import BinaryIO

import anyio
from memvm.ui.graceful import AnswerCut
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

# What a download reads from its spool and sends at once.
CHUNK_BYTES = 1 << 16


@dataclass(frozen=True)
class ExportLimits:
    """Exports at once per namespace and per process; bytes all spools may hold together; seconds
    a download may wait for its client to read before it is cut."""

    per_namespace: int = 2
    per_process: int = 4
    spool_bytes: int = 2 * 2**30
    stall_s: float = 30.0

    @property
    def namespace_bytes(self) -> int:
        """The most one namespace's spools may hold: half of them all."""
        return self.spool_bytes // 2


class ExportBusy(Exception):
    """Refused for now: the namespace's or the process's exports are all running."""

    def __init__(self) -> None:
        super().__init__("An export is already running; try again when it ends.")


class ExportTooLarge(Exception):
    """Refused for good: the namespace's export is larger than the view spools for one namespace."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"This export is larger than the {limit / 2**30:g} GiB the view holds for a download; "
            "run memvm export --namespace on the machine that holds the database instead."
        )


class Exports:
    """The exports running in this process, and what their spools hold."""

    def __init__(self, limits: ExportLimits | None = None) -> None:
        self.limits = limits or ExportLimits()
        self._running: Counter[str] = Counter()
        self._spooled: Counter[str] = Counter()
        self._reading = anyio.Lock()

    @property
    def running(self) -> int:
        return self._running.total()

    @property
    def spooled_bytes(self) -> int:
        return self._spooled.total()

    def start(self, namespace: str) -> "Spool":
        """A new export of `namespace`, counted until its spool is released; ExportBusy if the
        namespace or the process already runs as many as it may."""
        if self._running[namespace] >= self.limits.per_namespace or self.running >= self.limits.per_process:
            raise ExportBusy()
        self._running[namespace] += 1
        return Spool(self, namespace)

    def reading(self) -> anyio.Lock:
        """Held while an export is read out of storage: one at a time in the process."""
        return self._reading

    def reserve(self, namespace: str, own: int, more: int) -> None:
        """Room for `more` bytes of an export of `namespace` that has spooled `own` so far, or
        ExportTooLarge (it can never fit) or ExportBusy (others hold the room now)."""
        if own + more > self.limits.namespace_bytes:
            raise ExportTooLarge(self.limits.namespace_bytes)
        if self._spooled[namespace] + more > self.limits.namespace_bytes or (
            self.spooled_bytes + more > self.limits.spool_bytes
        ):
            raise ExportBusy()
        self._spooled[namespace] += more

    def finished(self, namespace: str, spooled: int) -> None:
        """An export of `namespace` ended, and its spool of `spooled` bytes is gone."""
        self._spooled[namespace] -= spooled
        self._running[namespace] -= 1
        for counter in (self._spooled, self._running):
            if counter[namespace] <= 0:
                del counter[namespace]


class Spool:
    """One export's temporary file: written a batch of lines at a time within the room the
    exports leave it, then read back by its download; released once, however it ends."""

    def __init__(self, exports: Exports, namespace: str) -> None:
        self._exports = exports
        self._namespace = namespace
        self._file: BinaryIO = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by release()
        self.size = 0
        self._released = False

    async def write(self, lines: list[str]) -> None:
        data = "".join(line + "\n" for line in lines).encode()
        self._exports.reserve(self._namespace, self.size, len(data))
        self.size += len(data)
        await anyio.to_thread.run_sync(self._file.write, data)

    async def rewind(self) -> None:
        await anyio.to_thread.run_sync(self._file.seek, 0)

    async def read(self) -> bytes:
        return await anyio.to_thread.run_sync(self._file.read, CHUNK_BYTES)

    def release(self) -> None:
        """Close the file (the system frees it) and give its room and its place back."""
        if self._released:
            return
        self._released = True
        self._file.close()
        self._exports.finished(self._namespace, self.size)


class Download(Response):
    """A spooled export sent to the client, cut with AnswerCut when the client has read nothing
    for `stall_s`; the spool is released however the download ends."""

    def __init__(self, spool: Spool, filename: str, stall_s: float) -> None:
        super().__init__(
            media_type="application/x-ndjson",
            headers={
                "content-disposition": f'attachment; filename="{filename}"',
                "content-length": str(spool.size),
            },
        )
        self._spool = spool
        self._stall_s = stall_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        delivered = True  # or the client went away, which is no one's fault to report
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
                delivered = await self._stream(send)
                group.cancel_scope.cancel()
        finally:
            self._spool.release()
        if not delivered:
            raise AnswerCut(f"an export download read nothing for {self._stall_s:g} s")

    async def _stream(self, send: Send) -> bool:
        """Send the spool; False as soon as a message has waited `stall_s` for the client."""
        start = {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        if not await self._sent(send, start):
            return False
        while chunk := await self._spool.read():
            if not await self._sent(send, {"type": "http.response.body", "body": chunk, "more_body": True}):
                return False
        return await self._sent(send, {"type": "http.response.body", "body": b"", "more_body": False})

    async def _sent(self, send: Send, message: Message) -> bool:
        # uvicorn's send waits while the client's socket is full: it returns once the client has
        # read some of what was sent before.
        with anyio.move_on_after(self._stall_s) as waited:
            await send(message)
        return not waited.cancelled_caught


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
