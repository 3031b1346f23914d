"""A throwaway PostgreSQL server for the tests and benchmarks: initdb in a temporary folder, start on
a free loopback port, stop and remove at the end. Nothing is left behind and no system cluster is
touched. `MEMVM_TEST_POSTGRES=URL` uses a running server instead (its databases are created and
dropped by the tests, so give it a user that may create databases).

Run as a script it starts one and prints its URL, for trying memvm on PostgreSQL by hand:
`python tests/postgres_server.py` (Ctrl-C stops it).
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

HOW_TO_ENABLE = (
    "PostgreSQL tests skipped: no PostgreSQL server binaries found (apt-get install postgresql, "
    "or set MEMVM_TEST_POSTGRES=postgresql://user@host:port/db)"
)


def binaries() -> Path | None:
    """The folder holding initdb and pg_ctl: on PATH, or Debian's versioned folder."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return Path(folders[-1]) if folders else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    url: str  # the maintenance database; tests create their own beside it
    _folder: Path | None = None
    _bin: Path | None = None

    def database_url(self, name: str) -> str:
        return self.url.rsplit("/", 1)[0] + "/" + name

    def admin(self, sql: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def stop(self) -> None:
        if self._folder is None or self._bin is None:
            return
        _as_owner(
            [str(self._bin / "pg_ctl"), "-D", str(self._folder / "data"), "-m", "immediate", "-w", "stop"]
        )
        shutil.rmtree(self._folder, ignore_errors=True)
        self._folder = None


def _as_owner(command: list[str]) -> None:
    # initdb and pg_ctl refuse root; as root they run as the postgres user.
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def start() -> Server:
    """A running server: MEMVM_TEST_POSTGRES's, or a new throwaway one. Raises RuntimeError with
    HOW_TO_ENABLE when neither is possible."""
    given = os.environ.get("MEMVM_TEST_POSTGRES")
    if given:
        return Server(given)
    folder_bin = binaries()
    if folder_bin is None:
        raise RuntimeError(HOW_TO_ENABLE)
    # Short: the server's unix socket goes in it, and its path must stay under 107 bytes.
    folder = Path(tempfile.mkdtemp(prefix="mvpg", dir="/tmp"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data = folder / "data"
    _as_owner(
        [
            str(folder_bin / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]
    )
    port = _free_port()
    # fsync and synchronous_commit off: a test server's durability is not under test, its speed is.
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=300"
    )
    _as_owner(
        [str(folder_bin / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "start", "-o", options]
    )
    server = Server(f"postgresql://postgres@127.0.0.1:{port}/postgres", folder, folder_bin)
    deadline = time.monotonic() + 30
    while True:
        try:
            server.admin("SELECT 1")
            return server
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.2)


if __name__ == "__main__":
    running = start()
    print(running.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        running.stop()
