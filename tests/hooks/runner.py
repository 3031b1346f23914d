"""Running `memvm hook HOST` on one event, and reading what it stored.

`run_hook` runs the hook's own entry point in this process (`memvm.server.cli.main.main`, the function
the `memvm` script calls), with the event on stdin and the answer read from stdout: the code the
host's process runs, without a Python start and the engine's imports per event. It answers each
event itself (`--background-idle 0`), as the real process does for the first event of a database.
`run_hook_process` starts the real process, for the tests of the process itself (the background
process, stdin, exit codes), which run in the end-to-end stage. Both run through tests/commands.py.
"""

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.commands import run, run_process
from tests.conftest import db_rows

Answer = tuple[dict[str, Any], list[str]]


def _event_bytes(event: Any) -> bytes:
    return event if isinstance(event, bytes) else json.dumps(event).encode()


def run_hook(host: str, db: Path | str, event: Any, *extra: str) -> Answer:
    """The answer (parsed stdout) and the stderr lines of one hook event, handled in this process.

    Flags in `extra` come after the defaults, so a test's own `--background-idle` wins.
    """
    code, out, err = run_in_process(
        ["hook", host, "--db", str(db), "--background-idle", "0", *extra], _event_bytes(event)
    )
    assert code == 0, err
    return json.loads(out), err.splitlines()


def run_in_process(argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `memvm ARGV` run through the script's own main in this process."""
    done = run(*argv, stdin=stdin)
    return done.status, done.stdout, done.stderr


def run_hook_process(host: str, db: Path | str, event: Any, *extra: str) -> Answer:
    """As `run_hook`, through the real `memvm hook` process with its background process."""
    done = run_process("hook", host, "--db", str(db), *extra, stdin=_event_bytes(event))
    assert done.status == 0, done.stderr
    return json.loads(done.stdout), done.stderr.splitlines()


def within(seconds: float, call: Callable[[], Any], fifo: Path) -> Any:
    """What `call` returns, or None when it has not returned after `seconds`: a call that waits on
    `fifo` is then let go (a writer opens it and leaves), so that no thread stays stuck."""
    done: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: done.setdefault("answer", call()), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        with contextlib.suppress(OSError):  # no reader waits on it
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(seconds)
        return None
    return done["answer"]


def rows(db: Path | str, sql: str) -> list[tuple[Any, ...]]:
    """What `sql` reads from the database past memvm, a SQLite file or a PostgreSQL URL."""
    return db_rows(db, sql)


def transcript(db: Path | str) -> list[tuple[str, str, str]]:
    """(session, role, text) of each transcript page, oldest first."""
    return rows(
        db,
        "SELECT p.session, p.role, t.content FROM pages p JOIN page_texts t USING (rowid) "
        "WHERE p.type = 'transcript' ORDER BY p.rowid",
    )


def background_pids(runtime: Path) -> list[int]:
    """The pids of the background processes started under `runtime` that are still alive."""
    alive = []
    for lock in runtime.glob("*.lock"):
        text = lock.read_text().strip()
        if text.isdigit() and _alive(int(text)):
            alive.append(int(text))
    return alive


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for_background(runtime: Path, *, timeout: float = 60) -> int:
    """The pid of the background process once it listens under `runtime`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = background_pids(runtime)
        if pids and list(runtime.glob("*.sock")):
            return pids[0]
        time.sleep(0.05)
    raise AssertionError("no background process started")


def stop_background(runtime: Path) -> None:
    for pid in background_pids(runtime):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def verdicts(db: Path | str) -> list[tuple[str, str]]:
    """(tool, verdict) of every call the guards decided, oldest first: what an empty answer meant."""
    return [
        (tool, verdict)
        for tool, verdict in rows(db, "SELECT tool, verdict FROM guard_verdicts ORDER BY rowid")
    ]
