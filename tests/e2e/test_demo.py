"""`memvm demo`, the README's first command, run as a user would."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_the_demo_runs_end_to_end_and_shows_memory_and_bindings_surviving_a_restart(tmp_path):
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
    assert "level 2, " in out and "level 0, " in out
    assert "Pass references instead of copied values: rate=1.0862 -> $v1" in out
    assert "No source for fee=35" in out
    assert "verdict=block cached_result=1955.16 ($v2)" in out
    assert "resolves to {'usd': 1955.16, 'rate': 1.0862}" in out
    assert out.rstrip().endswith("Done: the same memory and bindings survived a restart.")
    assert db.exists()
