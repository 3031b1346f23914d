"""The `memvm` command on paths it cannot use: one line on stderr, exit 2, no traceback.

Each case is one that used to end in a traceback or quietly destroy a file: a device as the
database, a folder that cannot be made or written, an export over an existing file, a backup over
another backup's partial file. The commands run in this process through memvm's entry point, or as
a user that file modes bind where a read-only folder is the point; a terminated backup is a real
process, sent a real signal.
"""

import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.commands import LIMIT, run, run_unprivileged, started
from tests.conftest import db_rows
from tests.engine.old_schema import add_page, add_session, file_at
from tests.hooks import claude_code_events as cc
from tests.hooks.runner import run_hook
from tests.seeding import notes, seed
from tests.server.unprivileged import open_dir, read_only, readable_by_all


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return seed(tmp_path / "memvm.db")


@pytest.mark.parametrize(
    "command", [["serve"], ["doctor"], ["export"], ["import", "-"], ["backup", "copy.db"], ["gc"]]
)
def test_a_device_as_the_database_is_refused_in_one_line(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    line = run(*command, "--db", "/dev/null").refusal()
    assert "/dev/null is not a regular file" in line
    assert list(tmp_path.iterdir()) == []


def unusable_database(case: str, tmp_path: Path) -> Path:
    """A --db path that names no database memvm can use, of the `case` given."""
    match case:
        case "a file in /proc":
            return Path("/proc/memvm.db")
        case "a folder":
            (tmp_path / "folder").mkdir()
            return tmp_path / "folder"
        case _:  # a path under a file
            (tmp_path / "file").write_text("not a folder")
            return tmp_path / "file" / "memvm.db"


UNUSABLE = ["a file in /proc", "a folder", "a path under a file"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc on this system")
@pytest.mark.parametrize("case", UNUSABLE)
@pytest.mark.parametrize("command", ["serve", "doctor", "export", "ui"])
def test_a_database_path_that_cannot_be_used_is_refused_in_one_line(tmp_path, monkeypatch, command, case):
    monkeypatch.chdir(tmp_path)
    db = unusable_database(case, tmp_path)
    line = run(command, "--db", db).refusal()
    assert str(db.parent if case == "a path under a file" else db) in line
    # Nothing was made or changed: no database, no folder in place of the file.
    left = {"a file in /proc": [], "a folder": ["folder"], "a path under a file": ["file"]}[case]
    assert sorted(path.name for path in tmp_path.iterdir()) == left
    if case == "a folder":
        assert list((tmp_path / "folder").iterdir()) == []
    if case == "a path under a file":
        assert (tmp_path / "file").read_text() == "not a folder"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc on this system")
@pytest.mark.parametrize("case", UNUSABLE)
def test_a_hook_on_a_database_path_that_cannot_be_used_answers_empty_with_one_line(tmp_path, case):
    answer, errors = run_hook("claude-code", unusable_database(case, tmp_path), cc.prompt("hello"))
    assert answer == {}
    (line,) = errors
    assert line.startswith("memvm hook: the database cannot be used") and "Traceback" not in line


@pytest.mark.parametrize("command", ["serve", "doctor", "export", "ui"])
def test_a_database_in_a_folder_this_user_may_not_enter_is_refused_in_one_line(command):
    with open_dir() as shared:
        closed = shared / "closed"
        closed.mkdir()
        closed.chmod(0)  # binds the folder's owner too, and root's forked copy runs as nobody
        try:
            line = run_unprivileged(command, "--db", closed / "memvm.db").refusal()
        finally:
            closed.chmod(0o700)
    assert line == f"memvm: cannot reach {closed / 'memvm.db'} (Permission denied)"


@pytest.mark.parametrize("command", [["serve"], ["import", "-"]])
def test_a_database_folder_that_cannot_be_made_is_refused_in_one_line(tmp_path, command):
    (tmp_path / "file").write_text("not a folder")
    line = run(*command, "--db", tmp_path / "file" / "sub" / "m.db").refusal()
    assert "cannot create the folder" in line
    assert (tmp_path / "file").read_text() == "not a folder"


@pytest.mark.parametrize("command", [["serve"], ["import", "-"]])
def test_a_database_folder_under_a_read_only_one_is_refused_in_one_line(command):
    with open_dir() as shared:
        locked = shared / "locked"
        locked.mkdir()
        read_only(locked)
        line = run_unprivileged(*command, "--db", locked / "sub" / "m.db").refusal()
        assert "cannot create the folder" in line
        assert not (locked / "sub").exists()


def test_an_export_into_a_folder_it_cannot_write_is_refused_in_one_line(db, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    assert "cannot write" in run("export", "--db", db, "--out", tmp_path / "file" / "x.jsonl").refusal()
    assert "cannot write" in run("export", "--db", db, "--out", tmp_path / "missing" / "x.jsonl").refusal()
    assert not (tmp_path / "missing").exists()
    with open_dir() as shared:
        readable_by_all(seed(shared / "m.db"))
        (shared / "locked").mkdir()
        read_only(shared / "locked")
        done = run_unprivileged("export", "--db", shared / "m.db", "--out", shared / "locked" / "x.jsonl")
        assert "cannot write" in done.refusal()
        assert list((shared / "locked").iterdir()) == []


def test_an_export_keeps_an_existing_file_unless_forced(db, tmp_path):
    out = tmp_path / "notes.jsonl"
    out.write_text("precious")
    line = run("export", "--db", db, "--out", out).refusal()
    assert "already exists; name a new file, or pass --force" in line
    assert out.read_text() == "precious"
    done = run("export", "--db", db, "--out", out, "--force")
    assert done.status == 0, done.stderr
    assert out.read_text().startswith('{"format":"memvm-export"')
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


def test_a_backup_never_takes_over_a_partial_file_it_did_not_make(db, tmp_path):
    target = tmp_path / "copy.db"
    partial = tmp_path / "copy.db.partial"
    partial.write_bytes(b"another backup, still running")
    assert "copy.db.partial exists" in run("backup", target, "--db", db).refusal()
    assert partial.read_bytes() == b"another backup, still running"
    assert not target.exists()


def test_a_backup_into_a_folder_it_cannot_write_is_refused_in_one_line(db, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    assert "cannot write" in run("backup", tmp_path / "file" / "copy.db", "--db", db).refusal()


@pytest.mark.slow
def test_a_terminated_backup_removes_its_partial_file_and_exits(db, tmp_path):
    # Another connection holds the file exclusively, so the backup waits inside SQLite with its
    # partial file made; SIGTERM is sent then, at a few moments after the file appears (the
    # moments just after it catch a copy's connection half-opened), and the lock let go.
    for after_s in (0, 0.002, 0.01, 0.05):
        folder = tmp_path / f"after-{after_s}"
        folder.mkdir()
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        partial = folder / "copy.db.partial"
        with started("backup", folder / "copy.db", "--db", db) as process:
            try:
                deadline = time.monotonic() + LIMIT
                while not partial.exists():
                    assert process.poll() is None and time.monotonic() < deadline
                    time.sleep(0.001)
                time.sleep(after_s)
                process.send_signal(signal.SIGTERM)
            finally:
                holder.close()
            _, stderr = process.communicate(timeout=LIMIT)
        assert process.returncode == 128 + signal.SIGTERM, (after_s, stderr)
        assert stderr == "", after_s
        assert list(folder.iterdir()) == [], after_s


@pytest.mark.slow
def test_a_terminated_import_from_a_pipe_exits_as_terminated_and_imports_nothing(db, tmp_path):
    # The import waits on a pipe its writer keeps open; SIGTERM is acted on once the read returns
    # (here: the writer closes the pipe), and the input that was cut short is not what it reports.
    before = db_rows(db, "SELECT count(*) FROM pages")
    with started("import", "-", "--db", db, stdin=subprocess.PIPE) as process:
        process.stdin.write('{"format":"memvm-export"')  # a line never finished
        process.stdin.flush()
        time.sleep(2)  # the import is under way, reading
        process.send_signal(signal.SIGTERM)
        process.stdin.close()
        process.wait(timeout=LIMIT)
        stderr = process.stderr.read()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert stderr == ""
    assert db_rows(db, "SELECT count(*) FROM pages") == before


def test_a_file_over_its_cap_is_served_and_not_called_a_full_disk(tmp_path):
    db = tmp_path / "big.db"
    seed(db, notes(*(f"report {i}: " + "lorem " * 3000 for i in range(30))))
    assert db.stat().st_size > 2**20
    done = run("serve", "--db", db, "--max-db-mb", "1")  # stdin at its end: serves, then stops
    assert done.status == 0, done.stderr
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
    line = run("serve", "--db", db, "--max-db-mb", "1").refusal()
    assert "no room left under --max-db-mb 1 for this memvm's schema upgrade" in line
    assert "disk" not in line


def test_gc_on_a_database_this_user_cannot_write_says_who_should_run_it():
    with open_dir() as shared:
        db = seed(shared / "m.db", notes("kept"))
        readable_by_all(db)
        read_only(db)  # whoever runs the tests, root (as nobody) or not
        before = db.read_bytes()
        line = run_unprivileged("gc", "--db", db).refusal()
        assert "this user cannot write it or its folder" in line
        assert db.read_bytes() == before
