"""Stopping a server the way people do: Ctrl-C (SIGINT) or SIGTERM ends `memvm ui` and `memvm serve`
over HTTP at once, with exit status 0, no traceback, and the database closed (its WAL folded back).

Signals go to real processes: these tests are of the slow stage.
"""

import re
import signal
import socket
import sqlite3
from pathlib import Path

import pytest

from tests.commands import LIMIT, started
from tests.seeding import bindings, chat_with_note, seed

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", ["ui", "serve"])
def test_a_signal_stops_the_server_cleanly(tmp_path, command, sig):
    db = tmp_path / "m.db"
    seed(db, chat_with_note("hello", "hi"))
    args = ["ui", "--db", db]
    if command == "serve":
        args = ["serve", "--db", db, "--transport", "streamable-http", "--port", "0", "--log-level", "INFO"]
    with started(*args) as process:
        # Running once it says where: the URL on stdout (ui), uvicorn's line on stderr (serve).
        stream = process.stdout if command == "ui" else process.stderr
        assert stream is not None
        for line in stream:
            if "http://" in line:
                break
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_signal_during_a_slow_download_stops_the_view_after_a_short_grace(tmp_path):
    db = tmp_path / "m.db"
    # 36 MB of export: more than the sockets' buffers hold.
    seed(db, chat_with_note("hello", "hi"), bindings(*["x" * 900_000] * 40, tool="dump"))
    with started("ui", "--db", db) as process:
        assert process.stdout is not None
        host, port, token = re.match(
            r"http://([^:]+):(\d+)/#token=(\S+)", process.stdout.readline().strip()
        ).groups()
        # A download that stalls: the answer's first bytes read, then nothing, on a small window.
        with socket.socket() as download:
            download.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            download.connect((host, int(port)))
            request = (
                f"GET /api/export HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
            )
            download.sendall(request.encode())
            assert download.recv(12) == b"HTTP/1.1 200"
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "timeout graceful shutdown exceeded" in stderr
