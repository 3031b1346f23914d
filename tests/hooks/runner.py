"""Running the real `memvm hook HOST` process, and reading what it stored."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import db_rows

MEMVM = Path(sys.executable).with_name("memvm")


def run_hook(host: str, db: Path | str, event: Any, *extra: str) -> tuple[dict[str, Any], list[str]]:
    """The answer (parsed stdout) and the stderr lines of one hook run, which must exit 0."""
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    done = subprocess.run(
        [str(MEMVM), "hook", host, "--db", str(db), *extra],
        input=raw,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr.decode().splitlines()


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
