"""Log lines that cannot flood: a burst of similar lines is let through, the rest counted.

A client can make the server log on every request it sends (a malformed request, a refused
session, an exhausted file limit with its traceback). Without a bound that fills the disk and
buries every other line; with this filter each kind of line appears at most BURST times a
window, and a line of its own before the next one after the window says how many were held back.
"""

import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

BURST = 10
WINDOW_S = 60.0
# Kinds of line remembered at once; the least recently seen is forgotten first.
MAX_KINDS = 512

# Where the counts of lines held back are said.
NOTES = logging.getLogger("memvm.log")
# Numbers, ids and addresses differ between lines of one kind ("session 3f2a…", "127.0.0.1:53211").
_VARYING = re.compile(r"[0-9a-fA-F]{8,}|\d+")


@dataclass
class _Window:
    started: float
    lines: int = 1
    held_back: int = 0


class FloodFilter(logging.Filter):
    """Passes at most `burst` similar records per `window_s`; says on the next one how many it held."""

    def __init__(
        self, burst: int = BURST, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._burst = burst
        self._window_s = window_s
        self._clock = clock
        self._windows: OrderedDict[tuple[str, int, str], _Window] = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, _VARYING.sub("#", record.getMessage()))
        now = self._clock()
        window = self._windows.get(kind)
        if window is not None:
            self._windows.move_to_end(kind)
        if window is not None and now - window.started < self._window_s:
            window.lines += 1
            if window.lines <= self._burst:
                return True
            window.held_back += 1
            return False
        self._windows[kind] = _Window(started=now)
        if len(self._windows) > MAX_KINDS:
            self._windows.popitem(last=False)
        if window is not None and window.held_back:
            # A line of its own, the record left as it is: a formatter may build the line from the
            # record's arguments (uvicorn's access log does), not from its message.
            NOTES.log(record.levelno, "%d lines like the next one were held back", window.held_back)
        return True


def quiet_floods(logger_names: tuple[str, ...] = ("", "uvicorn", "uvicorn.access")) -> FloodFilter:
    """Put one FloodFilter on every handler of these loggers (the root, and uvicorn's own)."""
    flood = FloodFilter()
    root = logging.getLogger()
    if not root.handlers:
        # Without a handler, Python's last-resort handler would print records unfiltered.
        root.addHandler(logging.StreamHandler())
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(flood)
    return flood
