"""uvicorn, stopped by a signal the way memvm's own commands are: it finishes the requests in
flight, returns, and the caller closes the engine; nothing is raised after.

uvicorn's own `serve()` raises the captured signal again once it has shut down, so that its CLI
dies of it. Inside `anyio.run` that arrives as a KeyboardInterrupt which cancels the engine's
close half-way: a traceback is printed, and the database's connection thread, left running,
keeps the process alive after Ctrl-C.
"""

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator

import uvicorn

# Seconds a stopping server waits for answers still going out (a slow export download) before it
# cuts them: Ctrl-C must not wait for a download to finish.
GRACE_S = 5
# The signals that stop a server (uvicorn's own set).
STOPPING = (signal.SIGINT, signal.SIGTERM)


class AnswerCut(Exception):
    """Raised by the application to cut an answer it has started (a download the client stopped
    reading): uvicorn closes the connection, so the client sees the answer end short, and logs
    nothing of it."""


class _CutAnswersUntraced(logging.Filter):
    """uvicorn logs each answer it cuts at the end of the grace as an error with a traceback; the
    line before it ("Cancel N running task(s)") already says so, once. An answer the application
    cut on purpose (AnswerCut) is no error at all."""

    def filter(self, record: logging.LogRecord) -> bool:
        cut = record.exc_info is not None and isinstance(
            record.exc_info[1], asyncio.CancelledError | AnswerCut
        )
        return not cut


class GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self._on_started = on_started
        # After the Config, which sets uvicorn's loggers up.
        logging.getLogger("uvicorn.error").addFilter(_CutAnswersUntraced())

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # Told once the signals are handled here and the sockets served: a signal sent on seeing
        # the announcement stops the server cleanly rather than killing it.
        if self.started and self._on_started is not None:
            self._on_started()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals can only be handled on the main thread (as in uvicorn).
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in STOPPING}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
