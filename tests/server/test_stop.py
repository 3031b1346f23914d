"""Stopping a server the way people do: Ctrl-C (SIGINT) or SIGTERM ends `memvm ui` and `memvm serve`
over HTTP at once, with exit status 0, no traceback, and the database closed (its WAL folded back)."""

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ui.seed import seed

MEMVM = Path(sys.executable).with_name("memvm")
LIMIT = 60  # seconds; generous on a busy machine


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", ["ui", "serve"])
def test_a_signal_stops_the_server_cleanly(tmp_path, command, sig):
    db = tmp_path / "m.db"
    seed(db, "hello", "hi")
    args = ["ui", "--db", str(db)]
    if command == "serve":
        args = [
            "serve",
            "--db",
            str(db),
            "--transport",
            "streamable-http",
            "--port",
            "0",
            "--log-level",
            "INFO",
        ]
    with subprocess.Popen(
        [str(MEMVM), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            # Running once it says where: the URL on stdout (ui), uvicorn's line on stderr (serve).
            stream = process.stdout if command == "ui" else process.stderr
            assert stream is not None
            for line in stream:
                if "http://" in line:
                    break
            process.send_signal(sig)
            _, stderr = process.communicate(timeout=LIMIT)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
