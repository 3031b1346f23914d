"""`memvm demo`, the README's first command, run as a user would."""

import subprocess
import sys

import pytest
from memvm.server.cli.main import EXIT_READER_GONE

from tests.server.test_cli import read_then_close

pytestmark = pytest.mark.slow


def test_the_demo_runs_end_to_end_and_shows_memory_bindings_and_fixes_surviving_a_restart(tmp_path):
    db = tmp_path / "demo.db"
    done = subprocess.run(
        [sys.executable, "-m", "memvm.server", "demo", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "\x1b[" not in out  # no terminal codes in a pipe
    flat = " ".join(out.split())  # long messages are wrapped for the terminal
    assert "level 2, " in out and "level 0, " in out
    assert "Pass references instead of copied values: rate=1.0862 -> $v1" in out
    assert "No source for fee=35" in out
    assert "verdict=block cached_result=1955.16 ($v2)" in out
    assert "resolves to {'usd': 1955.16, 'rate': 1.0862}" in out
    assert (
        'fixed it with {"added": {}, "removed": {}, "changed": {"date": {"from": "18/05/2026", "to": "2026-05-18"}}}'
        in flat
    )
    assert 'Earlier fix for "invalid date <q>: expected yyyy-mm-dd": book_table call 1 failed' in flat
    *_, done_line, next_line = out.rstrip().splitlines()
    assert done_line == "Done: the memory, the bindings and the learned fix survived a restart."
    assert next_line == f"See what it stored in your browser: memvm ui --db {db}"
    assert db.exists()


def test_the_demo_ends_quietly_when_its_reader_stops_early(tmp_path):
    # `memvm demo | head -3`: the third line comes once the server answers; much more follows.
    head, status, stderr = read_then_close("process", "demo", "--db", str(tmp_path / "demo.db"), lines=3)
    assert head[0].startswith("memvm demo — database:".encode())
    assert head[2].startswith("▶ Started `memvm serve`".encode())
    assert status == EXIT_READER_GONE
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr[-2000:]
