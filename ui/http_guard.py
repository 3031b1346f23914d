"""The HTTP connections themselves: a request must arrive in time, and the sockets stay countable.

Both of memvm's HTTP servers (`memvm serve` over HTTP, `memvm ui`) run uvicorn through
`guarded_server`, so they share these limits and the bounded log (log_flood).

uvicorn waits for a request's headers and body for as long as the client likes, and accepts
sockets until the process runs out of file descriptors. Then a few hundred half-sent requests
lock every client out, and the failing accept loop floods the log. Here a connection gets
HEADER_TIMEOUT_S to send its headers and BODY_TIMEOUT_S to send its body, and past the connection
limit the socket that has waited longest for its headers is closed to make room, so clients that
send whole requests keep being served.
"""

import asyncio
import sys
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

import h11
import uvicorn
from memvm.ui.graceful import GRACE_S, GracefulServer
from memvm.ui.log_flood import quiet_floods
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

# A client on any real network sends its request line and headers well within this.
HEADER_TIMEOUT_S = 10.0
# The largest body allowed (memvm.server.http.MAX_REQUEST_BYTES) arrives at under 150 KB/s.
BODY_TIMEOUT_S = 60.0
# Enough for many agents; the connection limit stays below it where the file limit is lower.
MAX_CONNECTIONS = 1000
# File descriptors kept free beside the clients' sockets: the database and its WAL, the log, the
# listening socket, and what the SDK and Python open on their own.
SPARE_FILES = 64
# Connections the kernel queues before they are accepted. asyncio accepts up to this many at each
# turn of the loop, and each reaches the connection limit's check only a turn or two later: room
# for a few such batches is kept free, or a burst of sockets would still exhaust the file limit.
BACKLOG = 64
ACCEPT_BATCHES = 3
# Seconds an idle keep-alive connection is kept between requests (uvicorn's default).
KEEP_ALIVE_S = 5


def connection_limit() -> int:
    """How many client sockets to keep at most: MAX_CONNECTIONS, or fewer if the file limit is lower."""
    if sys.platform == "win32":
        return MAX_CONNECTIONS
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, soft - SPARE_FILES - ACCEPT_BATCHES * BACKLOG))


class Phase(Enum):
    HEADERS = "headers"  # waiting for a request line and its headers (also between keep-alive requests)
    BODY = "body"  # headers in, body still coming
    SERVING = "serving"  # the whole request is in: the application has it, however long it takes


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines for the request's arrival and a connection limit."""

    max_connections = MAX_CONNECTIONS
    header_timeout_s = HEADER_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None
        # When this connection started waiting for headers: the longest waiting goes first.
        self.waiting_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._follow_phase()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_phase()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_phase()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _follow_phase(self) -> None:
        """Start the deadline of the phase the connection has just entered, if it changed."""
        if self.transport.is_closing():
            self._cancel_deadline()
            return
        phase = {h11.IDLE: Phase.HEADERS, h11.SEND_BODY: Phase.BODY}.get(self.conn.their_state, Phase.SERVING)
        if phase is self._phase:
            return  # a deadline runs from the start of its phase, not from the last byte
        self._cancel_deadline()
        self._phase = phase
        if phase is Phase.HEADERS:
            self.waiting_since = time.monotonic()
            self._deadline = self.loop.call_later(self.header_timeout_s, self._too_slow)
        elif phase is Phase.BODY:
            self._deadline = self.loop.call_later(self.body_timeout_s, self._too_slow)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        # Closed without a word: the client stopped sending, and nothing it would read helps.
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def waiting_for_headers(self) -> bool:
        return self._phase is Phase.HEADERS and not self.transport.is_closing()

    def _make_room(self) -> None:
        """Close the connection that has waited longest for headers; this one if none is waiting."""
        waiting = [
            other
            for other in self.connections
            if isinstance(other, GuardedH11Protocol) and other.waiting_for_headers() and other is not self
        ]
        victim = min(waiting, key=lambda other: other.waiting_since) if waiting else self
        # Out of the count now, not when the loop gets to its connection_lost.
        self.connections.discard(victim)
        victim.hang_up()

    def hang_up(self) -> None:
        self._cancel_deadline()
        self.transport.close()


def guarded_protocol(
    max_connections: int, header_timeout_s: float = HEADER_TIMEOUT_S, body_timeout_s: float = BODY_TIMEOUT_S
) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn with these limits (uvicorn builds it with no such arguments)."""
    limits = {
        "max_connections": max_connections,
        "header_timeout_s": header_timeout_s,
        "body_timeout_s": body_timeout_s,
    }
    return type("GuardedH11Protocol", (GuardedH11Protocol,), limits)


def guarded_server(
    app: ASGIApp, *, on_started: Callable[[], None] | None = None, **options: Any
) -> GracefulServer:
    """uvicorn serving `app` with these guards: the protocol with its deadlines under the
    connection limit, a short accept backlog, bounded keep-alive, and a stop that finishes what is
    in flight (graceful); every log line it and the event loop write goes through a FloodFilter.
    `options` are uvicorn.Config's (host and port, log level...)."""
    config = uvicorn.Config(
        app,
        http=guarded_protocol(connection_limit()),
        backlog=BACKLOG,
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=GRACE_S,
        **options,
    )
    # After the Config, which sets uvicorn's loggers up, so that their handlers get the filter too.
    # An exhausted file limit makes the event loop's accept fail again and again, each time with a
    # traceback: the root logger's handler, where those arrive, is filtered as well.
    quiet_floods()
    return GracefulServer(config, on_started)
