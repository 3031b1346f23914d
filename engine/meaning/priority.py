"""Threads that work in the background at a lower priority than the ones that answer requests."""

import contextlib
import os
import threading


def lower_priority() -> None:
    """Lower this thread's scheduling priority, where the system lets a thread have its own (on
    Linux, threads it starts inherit it)."""
    # Not Linux, or not allowed: the thread runs as it is.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
