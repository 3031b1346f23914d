"""The `memvm` command, run for real, on paths it cannot use: one line on stderr, exit 2, no traceback.

Each case is one that used to end in a traceback or quietly destroy a file: a device as the
database, a folder that cannot be made or written, an export over an existing file, a backup over
another backup's partial file.
"""

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine

from tests.conftest import note
from tests.engine.old_schema import add_page, add_session, file_at
from tests.server.unprivileged import open_dir, read_only, unprivileged

MEMVM = str(Path(sys.executable).with_name("memvm"))
LIMIT = 120  # seconds, for a command on a loaded 2-core machine


def memvm(*arguments: str | Path, as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    argv = [MEMVM, *map(str, arguments)]
    return subprocess.run(
        unprivileged(argv) if as_nobody else argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )


def refused(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("memvm: ") and says in line, line


async def create(db: Path) -> None:
    engine = await Engine.open(db)
    await engine.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memvm.db"
    anyio.run(create, path)
    return path


@pytest.mark.parametrize(
    "command", [["serve"], ["doctor"], ["export"], ["import", "-"], ["backup", "copy.db"], ["gc"]]
)
def test_a_device_as_the_database_is_refused_in_one_line(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    refused(memvm(*command, "--db", "/dev/null"), "/dev/null is not a regular file")


@pytest.mark.parametrize("command", [["serve"], ["import", "-"]])
def test_a_database_folder_that_cannot_be_made_is_refused_in_one_line(tmp_path, command):
    (tmp_path / "file").write_text("not a folder")
    refused(memvm(*command, "--db", tmp_path / "file" / "sub" / "m.db"), "cannot create the folder")


@pytest.mark.parametrize("command", [["serve"], ["import", "-"]])
def test_a_database_folder_under_a_read_only_one_is_refused_in_one_line(command):
    with open_dir() as shared:
        locked = shared / "locked"
        locked.mkdir()
        read_only(locked)
        done = memvm(*command, "--db", locked / "sub" / "m.db", as_nobody=True)
        refused(done, "cannot create the folder")
        assert not (locked / "sub").exists()


def test_an_export_into_a_folder_it_cannot_write_is_refused_in_one_line(db, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    refused(memvm("export", "--db", db, "--out", tmp_path / "file" / "x.jsonl"), "cannot write")
    refused(memvm("export", "--db", db, "--out", tmp_path / "missing" / "x.jsonl"), "cannot write")
    with open_dir() as shared:
        anyio.run(create, shared / "m.db")
        (shared / "locked").mkdir()
        read_only(shared / "locked")
        done = memvm(
            "export", "--db", shared / "m.db", "--out", shared / "locked" / "x.jsonl", as_nobody=True
        )
        refused(done, "cannot write")
        assert list((shared / "locked").iterdir()) == []


def test_an_export_keeps_an_existing_file_unless_forced(db, tmp_path):
    out = tmp_path / "notes.jsonl"
    out.write_text("precious")
    refused(memvm("export", "--db", db, "--out", out), "already exists; name a new file, or pass --force")
    assert out.read_text() == "precious"
    done = memvm("export", "--db", db, "--out", out, "--force")
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith('{"format":"memvm-export"')
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


def test_a_backup_never_takes_over_a_partial_file_it_did_not_make(db, tmp_path):
    target = tmp_path / "copy.db"
    partial = tmp_path / "copy.db.partial"
    partial.write_bytes(b"another backup, still running")
    refused(memvm("backup", target, "--db", db), "copy.db.partial exists")
    assert partial.read_bytes() == b"another backup, still running"
    assert not target.exists()


def test_a_backup_into_a_folder_it_cannot_write_is_refused_in_one_line(db, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    refused(memvm("backup", tmp_path / "file" / "copy.db", "--db", db), "cannot write")


def test_a_terminated_backup_removes_its_partial_file(db, tmp_path):
    # Another connection holds the file exclusively, so the backup waits inside SQLite with its
    # partial file made; SIGTERM is sent then, and acted on when the copy step returns.
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    target = tmp_path / "copy.db"
    partial = tmp_path / "copy.db.partial"
    with subprocess.Popen(
        [MEMVM, "backup", str(target), "--db", str(db)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            deadline = time.monotonic() + LIMIT
            while not partial.exists():
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            process.send_signal(signal.SIGTERM)
        finally:
            holder.close()
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("copy")] == []


async def fill(db: Path, pages: int) -> None:
    engine = await Engine.open(db)
    try:
        for i in range(pages):
            await engine.remember(
                namespace="default", session="s", page=note(f"report {i}: " + "lorem " * 3000)
            )
    finally:
        await engine.close()


def test_a_file_over_its_cap_is_served_and_not_called_a_full_disk(tmp_path):
    db = tmp_path / "big.db"
    anyio.run(fill, db, 30)
    assert db.stat().st_size > 2**20
    done = memvm("serve", "--db", db, "--max-db-mb", "1")  # stdin at its end: serves, then stops
    assert done.returncode == 0, done.stderr
    assert "full" not in done.stderr and "Traceback" not in done.stderr


def test_an_old_file_at_its_cap_that_needs_room_to_upgrade_names_the_cap_not_the_disk(tmp_path):
    db = tmp_path / "old.db"
    conn = file_at(db, 1)
    try:
        add_session(conn, "default", "s")
        for i in range(100):
            add_page(conn, "default", "s", f"page-{i}", f"report {i}: " + "lorem " * 3000)
    finally:
        conn.close()
    assert db.stat().st_size > 2**20
    done = memvm("serve", "--db", db, "--max-db-mb", "1")
    refused(done, "no room left under --max-db-mb 1 for this memvm's schema upgrade")
    assert "disk" not in done.stderr


def test_gc_on_a_database_this_user_cannot_write_says_who_should_run_it():
    with open_dir() as shared:
        db = shared / "m.db"
        anyio.run(create, db)
        db.chmod(0o644)
        refused(memvm("gc", "--db", db, as_nobody=True), "this user cannot write it or its folder")
