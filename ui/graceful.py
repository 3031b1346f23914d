"""uvicorn, stopped by a signal the way memvm's own commands are: it finishes the requests in
flight, returns, and the caller closes the engine; nothing is raised after.

uvicorn's own `serve()` raises the captured signal again once it has shut down, so that its CLI
dies of it. Inside `anyio.run` that arrives as a KeyboardInterrupt which cancels the engine's
close half-way: a traceback is printed, and the database's connection thread, left running,
keeps the process alive after Ctrl-C.
"""

import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator

import uvicorn

# The signals that stop a server (uvicorn's own set).
STOPPING = (signal.SIGINT, signal.SIGTERM)


class GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self._on_started = on_started

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
