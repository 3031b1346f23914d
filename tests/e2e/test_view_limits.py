"""The real `memvm ui` under a crowd: half-sent requests, an exhausted file limit, exports nobody
reads, and the owner's own requests meanwhile."""

import os
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
from memvm.ui.exports import ExportLimits
from memvm.ui.http_guard import HEADER_TIMEOUT_S
from memvm.ui.log_flood import BURST

from tests.commands import started
from tests.conftest import backend_of
from tests.e2e.test_http import START_LIMIT
from tests.e2e.test_http_limits import half_sent_request
from tests.seeding import bindings, seed, transcript, write

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EXPORT_STALL_S = ExportLimits().stall_s


@contextmanager
def view_process(db: Path | str, log: Path, file_limit: int | None = None) -> Iterator[tuple[int, str]]:
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
        view_pids.append(ui.pid)
        yield int(found.group(1)), found.group(2)
        ui.terminate()
        ui.wait(timeout=30)


# The processes view_process started, the last one last.
view_pids: list[int] = []


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


def spooled_bytes(pid: int) -> int:
    """The bytes of the deleted files the process holds open: its export spools."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd).endswith("(deleted)"):
                total += os.stat(fd).st_size
        except OSError:  # closed meanwhile
            continue
    return total


def spools_freed(pid: int) -> None:
    """Until the process holds no spool (polled: nothing it does can be waited on from here)."""
    while spooled_bytes(pid):
        time.sleep(0.2)


def unread_exports(
    port: int, token: str, count: int, *, path: str = "/api/export"
) -> tuple[list[socket.socket], list[int]]:
    """`count` requests for the export at `path`, each read up to its status and no further (and
    with a small receive buffer, so that the server's sending stops soon); the sockets and statuses."""
    held, statuses = [], []
    for _ in range(count):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(START_LIMIT)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        )
        held.append(sock)
    for sock in held:
        statuses.append(int(sock.recv(12)[9:12]))
    return held, statuses


def received(sock: socket.socket) -> int:
    """Read what is left until the server closes the connection; how many bytes came."""
    count = 0
    while chunk := sock.recv(1 << 16):
        count += len(chunk)
    return count


# Large enough that no kernel buffer holds it: the server's sending stops.
BIG_VALUES, BIG_VALUE = 6, 900_000


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts spooled bytes through /proc")
@pytest.mark.above_storage  # spools on both backends: tests/ui/test_exports.py
async def test_unread_exports_hold_two_spools_and_are_cut_when_they_stall(db_url, tmp_path, report_figure):
    await write(
        db_url,
        transcript("dump it all"),
        bindings(*("x" * BIG_VALUE for _ in range(BIG_VALUES)), tool="dump"),
    )
    log = tmp_path / "ui.log"
    with view_process(db_url, log) as (port, token):
        pid = view_pids[-1]
        with anyio.fail_after(START_LIMIT + EXPORT_STALL_S * 3):
            began = time.monotonic()
            held, statuses = await anyio.to_thread.run_sync(unread_exports, port, token, 20)
            spooled = spooled_bytes(pid)
            status, waited = await version(port, token)
            # Until the server cuts the two downloads nobody reads, and frees their spools.
            await anyio.to_thread.run_sync(spools_freed, pid)
            freed_after = time.monotonic() - began
            taken = [await anyio.to_thread.run_sync(received, sock) for sock in held[:2]]
        for sock in held:
            sock.close()
    report_figure(
        f"view_unread_exports: backend={backend_of(db_url)} requests=20 accepted={statuses.count(200)} "
        f"refused={statuses.count(429)} spooled_bytes={spooled} owner={status} owner_waited_s={waited:.3f} "
        f"freed_after_s={freed_after:.1f} log_bytes={log.stat().st_size}"
    )
    assert sorted(statuses) == [200, 200] + [429] * 18
    assert 2 * BIG_VALUES * BIG_VALUE < spooled < 3 * BIG_VALUES * BIG_VALUE
    assert status == 200
    assert freed_after > EXPORT_STALL_S - 1
    # Cut short: each client got less than its export, and the log says nothing of it.
    assert all(count < spooled / 2 for count in taken)
    assert log.read_text() == ""
