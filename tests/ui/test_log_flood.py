"""A flood of similar log lines is cut to a burst, and the next line after the window counts the rest."""

import logging

from memvm.ui.log_flood import FloodFilter
from uvicorn.logging import AccessFormatter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(message: str, *args: object, name: str = "uvicorn.error") -> logging.LogRecord:
    return logging.LogRecord(name, logging.WARNING, __file__, 1, message, args or None, None)


def test_similar_lines_past_the_burst_are_held_back_and_counted_on_the_next_window(caplog):
    clock = Clock()
    flood = FloodFilter(burst=3, window_s=60, clock=clock)
    # Lines differing only in an id or a port are one kind of line.
    passed = [
        flood.filter(record(f"Rejected session {index:032x} from 127.0.0.1:{5000 + index}"))
        for index in range(20)
    ]
    clock.now = 61
    after = record("Rejected session %s from %s", "ab" * 16, "127.0.0.1:6000")
    assert passed == [True] * 3 + [False] * 17
    with caplog.at_level(logging.WARNING, logger="memvm.log"):
        assert flood.filter(after)
    assert [note.getMessage() for note in caplog.records] == ["17 lines like the next one were held back"]
    assert after.getMessage() == f"Rejected session {'ab' * 16} from 127.0.0.1:6000"


def test_a_line_formatted_from_its_arguments_still_formats_after_lines_were_held_back(caplog):
    # uvicorn's access log unpacks the record's arguments; a record whose arguments were replaced
    # would fail to format, and the line would be lost.
    clock = Clock()
    flood = FloodFilter(burst=1, window_s=60, clock=clock)
    formatter = AccessFormatter(fmt='%(client_addr)s - "%(request_line)s" %(status_code)s')
    access = ("127.0.0.1:5000", "GET", "/mcp", "1.1", 400)
    for _ in range(5):
        flood.filter(record('%s - "%s %s HTTP/%s" %d', *access, name="uvicorn.access"))
    clock.now = 61
    after = record('%s - "%s %s HTTP/%s" %d', *access, name="uvicorn.access")
    with caplog.at_level(logging.WARNING, logger="memvm.log"):
        assert flood.filter(after)
    assert formatter.format(after) == '127.0.0.1:5000 - "GET /mcp HTTP/1.1" 400 Bad Request'
    assert [note.getMessage() for note in caplog.records] == ["4 lines like the next one were held back"]


def test_other_kinds_of_line_are_not_held_back_by_a_flood_of_one():
    flood = FloodFilter(burst=2, window_s=60, clock=Clock())
    for _ in range(10):
        flood.filter(record("Invalid HTTP request received."))
    assert flood.filter(record("Exceeded concurrency limit."))
    assert flood.filter(record("Invalid HTTP request received.", name="mcp.server"))
    assert not flood.filter(record("Invalid HTTP request received."))
