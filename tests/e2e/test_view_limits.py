"""The real `memvm ui` under a crowd: half-sent requests, an exhausted file limit, and the owner's
own requests meanwhile."""

import re
import resource
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from memvm.ui.http_guard import HEADER_TIMEOUT_S
from memvm.ui.log_flood import BURST

from tests.commands import started
from tests.e2e.test_http import START_LIMIT
from tests.e2e.test_http_limits import half_sent_request
from tests.seeding import seed, transcript

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@contextmanager
def view_process(db: Path, log: Path, file_limit: int | None = None) -> Iterator[tuple[int, str]]:
    """`memvm ui` on `db` with stderr in `log` and at most `file_limit` open files; yields its port
    and token."""

    def lower_the_file_limit() -> None:
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (file_limit, file_limit))

    with (
        log.open("w") as stderr,
        started("ui", "--db", db, stderr=stderr, preexec_fn=lower_the_file_limit) as ui,
    ):
        assert ui.stdout is not None
        line = ui.stdout.readline().strip()
        found = re.match(r"http://127\.0\.0\.1:(\d+)/#token=([A-Za-z0-9_\-]+)$", line)
        assert found, log.read_text()[-2000:]
        yield int(found.group(1)), found.group(2)
        ui.terminate()
        ui.wait(timeout=30)


@pytest.fixture
def viewed(tmp_path: Path) -> Path:
    return seed(tmp_path / "memvm.db", transcript("our staging cluster is heron", "and prod is egret"))


async def version(port: int, token: str) -> tuple[int, float]:
    """The owner asks for the namespace's version: the status, and the seconds it took."""
    began = time.monotonic()
    async with httpx2.AsyncClient(timeout=60) as http:
        answer = await http.get(
            f"http://127.0.0.1:{port}/api/version", headers={"Authorization": f"Bearer {token}"}
        )
    return answer.status_code, time.monotonic() - began


# Low enough that the sockets outnumber the file limit: the connection cap is what keeps room.
FILE_LIMIT = 512


async def test_stalled_sockets_past_the_cap_lock_no_one_out_of_the_view(viewed, tmp_path, report_figure):
    sockets = 400
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > sockets * 2, "this test needs more open files"
    log = tmp_path / "ui.log"
    closed: list[int] = []
    with view_process(viewed, log, FILE_LIMIT) as (port, token):
        with anyio.fail_after(START_LIMIT + HEADER_TIMEOUT_S * 4):
            async with anyio.create_task_group() as group:
                for _ in range(sockets):
                    await group.start(half_sent_request, port, closed)
                # With every socket still hanging, the owner's request is answered.
                status, waited = await version(port, token)
                # The group ends once the view has closed every half-sent request.
    report_figure(
        f"view_slowloris: sockets={sockets} file_limit={FILE_LIMIT} closed_by_server={len(closed)} "
        f"owner={status} owner_waited_s={waited:.3f} log_bytes={log.stat().st_size}"
    )
    assert status == 200
    assert len(closed) == sockets


async def test_a_header_that_never_completes_is_cut_after_the_deadline(viewed, tmp_path):
    closed: list[int] = []
    with view_process(viewed, tmp_path / "ui.log") as (port, token), anyio.fail_after(HEADER_TIMEOUT_S * 4):
        async with anyio.create_task_group() as group:
            began = time.monotonic()
            await group.start(half_sent_request, port, closed)
            status, _ = await version(port, token)
        cut_after = time.monotonic() - began
    assert status == 200
    assert closed == [port]
    assert HEADER_TIMEOUT_S - 1 <= cut_after < HEADER_TIMEOUT_S * 3


# So low that accepting a burst of sockets runs out of file descriptors before the cap can close
# any: the event loop's accept then fails, with a traceback, again and again.
STARVED_FILE_LIMIT = 40


def burst(port: int, count: int) -> list[socket.socket]:
    """`count` half-sent requests opened as fast as the kernel queues them, not one by one as the
    server accepts them."""
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=START_LIMIT)
        sock.sendall(f"GET /api/version HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Par".encode())
        held.append(sock)
    return held


def hung_up(sock: socket.socket) -> bool:
    try:
        while sock.recv(1024):
            pass
    except OSError:
        pass
    return True


async def test_a_flood_of_accept_errors_writes_a_bounded_log(viewed, tmp_path, report_figure):
    sockets = 300
    log = tmp_path / "ui.log"
    with view_process(viewed, log, STARVED_FILE_LIMIT) as (port, token):
        with anyio.fail_after(START_LIMIT + HEADER_TIMEOUT_S * 4):
            held = await anyio.to_thread.run_sync(burst, port, sockets)
            closed = [await anyio.to_thread.run_sync(hung_up, sock) for sock in held]
            # Once the crowd has been closed, the owner is served.
            status, _ = await version(port, token)
        for sock in held:
            sock.close()
    text = log.read_text()
    failed_accepts = text.count("out of system resource")
    report_figure(
        f"view_accept_flood: sockets={sockets} file_limit={STARVED_FILE_LIMIT} closed_by_server={len(closed)} "
        f"accept_errors_logged={failed_accepts} log_bytes={len(text.encode())} owner={status}"
    )
    assert status == 200
    # The flood happened, and only a burst of it was written.
    assert 1 <= failed_accepts <= BURST
    assert len(text.encode()) < 50 * 1024
