"""Malformed database files: `memvm serve` refuses each at start with one line and leaves it be.

Garbage, text, a SQLite header with nothing after it, a memvm file with a page overwritten, and
one cut short: each is refused before the server serves anything.
"""

import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine

from tests.conftest import NS, note

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

START_LIMIT = 60
PAGE_SIZE = 4096


async def real_database(path: Path) -> bytes:
    """A memvm file with a few hundred pages, checkpointed into the main file."""
    engine = await Engine.open(path)
    for i in range(300):
        await engine.session(NS, "s").remember(page=note(f"fact {i} about the orchard " * 8))
    await engine.close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return await anyio.Path(path).read_bytes()


def corrupt_page(data: bytes, page: int) -> bytes:
    """`data` with one page (1-based) overwritten by bytes that are no B-tree page."""
    start = (page - 1) * PAGE_SIZE
    return data[:start] + bytes([0xA5]) * PAGE_SIZE + data[start + PAGE_SIZE :]


def refused(path: Path) -> bool:
    """`memvm serve` exits non-zero with exactly one stderr line, no traceback, file unchanged."""
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "memvm.server", "serve", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=START_LIMIT,
        stdin=subprocess.DEVNULL,
    )
    lines = done.stderr.strip().splitlines()
    return (
        done.returncode != 0
        and done.stdout == ""
        and len(lines) == 1
        and lines[0].startswith("memvm: refusing to open")
        and "Traceback" not in done.stderr
        and path.read_bytes() == before
    )


async def test_garbage_text_corrupt_and_truncated_files_are_refused_at_start(tmp_path, report_figure):
    good = await real_database(tmp_path / "good.db")
    assert len(good) > 40 * PAGE_SIZE
    cases = {
        "garbage": bytes(range(256)) * 256,
        "text": b"this is a text file, not a database\n" * 500,
        "header only": b"SQLite format 3\x00" + b"\x00" * 5000,
        "corrupted page": corrupt_page(good, page=len(good) // PAGE_SIZE // 2),
        "truncated": good[: len(good) * 6 // 10],
    }
    outcomes = {}
    for name, content in cases.items():
        path = tmp_path / f"{name.replace(' ', '-')}.db"
        await anyio.Path(path).write_bytes(content)
        outcomes[name] = await anyio.to_thread.run_sync(refused, path)
    report_figure(f"malformed: refused={sum(outcomes.values())}/{len(outcomes)}")
    assert all(outcomes.values()), outcomes
