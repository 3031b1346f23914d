"""A flood of similar log lines is cut to a burst, and the next line after the window counts the rest."""

import logging

from memvm.ui.log_flood import FloodFilter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(message: str, *args: object, name: str = "uvicorn.error") -> logging.LogRecord:
    return logging.LogRecord(name, logging.WARNING, __file__, 1, message, args or None, None)


def test_similar_lines_past_the_burst_are_held_back_and_counted_on_the_next_window():
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
    assert flood.filter(after)
    assert (
        after.getMessage() == f"Rejected session {'ab' * 16} from 127.0.0.1:6000 (17 similar lines held back)"
    )


def test_other_kinds_of_line_are_not_held_back_by_a_flood_of_one():
    flood = FloodFilter(burst=2, window_s=60, clock=Clock())
    for _ in range(10):
        flood.filter(record("Invalid HTTP request received."))
    assert flood.filter(record("Exceeded concurrency limit."))
    assert flood.filter(record("Invalid HTTP request received.", name="mcp.server"))
    assert not flood.filter(record("Invalid HTTP request received."))
