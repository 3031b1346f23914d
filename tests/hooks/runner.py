"""Running the real `memvm hook HOST` process, and reading what it stored."""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

MEMVM = Path(sys.executable).with_name("memvm")


def run_hook(host: str, db: Path, event: Any, *extra: str) -> tuple[dict[str, Any], list[str]]:
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


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def transcript(db: Path) -> list[tuple[str, str, str]]:
    """(session, role, text) of each transcript page, oldest first."""
    return rows(
        db,
        "SELECT p.session, p.role, t.content FROM pages p JOIN page_texts t USING (rowid) "
        "WHERE p.type = 'transcript' ORDER BY p.rowid",
    )
