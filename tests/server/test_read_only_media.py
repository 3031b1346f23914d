"""A database on read-only media (a backup on a read-only mount, a folder nobody may write) is
served with --read-only and checked with doctor, as it is, without a -shm or -wal beside it.

The commands run as a user that file modes bind (see tests/commands.py): root would write the
folder regardless.
"""

import shutil
import sqlite3
from pathlib import Path

import anyio
from mcp import Client

from tests.commands import LIMIT, mcp_over, run_unprivileged, serving_unprivileged
from tests.seeding import notes, seed
from tests.server.conftest import call, call_error, read
from tests.server.unprivileged import open_dir, read_only, readable_by_all

FACTS = ("the spare key is under the blue pot", "the boiler is serviced every march", "the cat is fed twice")


def fill(db: Path) -> None:
    seed(db, notes(*FACTS, keys=[f"fact-{n}" for n in range(len(FACTS))], session="home"))


def test_a_database_on_read_only_media_is_served_and_checked_as_it_is(report_figure):
    with open_dir() as shared:
        media = shared / "media"
        media.mkdir()
        db = media / "memvm.db"
        fill(db)
        assert sorted(p.name for p in media.iterdir()) == ["memvm.db"]  # a clean close left no WAL
        readable_by_all(db)
        read_only(db, media)
        before = db.read_bytes()

        doctor = run_unprivileged("doctor", "--db", db)
        assert doctor.status == 0, doctor.stdout + doctor.stderr
        assert "journal wal" in doctor.stdout and "healthy" in doctor.stdout

        async def session(connection) -> tuple[list[dict], str, str]:
            with anyio.fail_after(LIMIT):
                async with Client(mcp_over(connection)) as client:
                    found = [await call(client, "search_pages", query=fact) for fact in FACTS]
                    page = await read(client, "memvm://pages/fact-0")
                    refused = await call_error(client, "remember", content="this cannot be stored")
            return found, page, refused

        with serving_unprivileged("--read-only", "--db", db) as connection:
            found, page, refused = anyio.run(session, connection)
        assert [hits["results"][0]["page_id"] for hits in found] == ["fact-0", "fact-1", "fact-2"]
        assert FACTS[0] in page
        assert "read-only" in refused
        assert db.read_bytes() == before
        assert sorted(p.name for p in media.iterdir()) == ["memvm.db"]
    report_figure(f"readonly_media: serve_reads={len(found) + 1} doctor=ok unchanged=True")


def test_a_read_only_copy_whose_last_writes_are_in_its_wal_is_refused_in_one_line():
    with open_dir() as shared:
        db = shared / "memvm.db"
        fill(db)
        # A copy taken while a writer had the file open: the last writes are only in the -wal.
        writer = sqlite3.connect(db, isolation_level=None)
        try:
            writer.execute("PRAGMA wal_autocheckpoint=0")
            writer.execute("UPDATE pages SET importance = 0.9")
            media = shared / "media"
            media.mkdir()
            for name in ("memvm.db", "memvm.db-wal"):
                shutil.copy(shared / name, media / name)
                readable_by_all(media / name)
        finally:
            writer.close()
        read_only(media)
        for command in (["serve", "--read-only"], ["doctor"]):
            line = run_unprivileged(*command, "--db", media / "memvm.db").refusal()
            assert "its last writes are in its -wal file" in line
        assert sorted(p.name for p in media.iterdir()) == ["memvm.db", "memvm.db-wal"]


def test_serving_a_file_it_cannot_write_without_read_only_says_so_and_suggests_read_only():
    with open_dir() as shared:
        media = shared / "media"
        media.mkdir()
        fill(media / "memvm.db")
        readable_by_all(media / "memvm.db")
        read_only(media / "memvm.db", media)
        on_media = run_unprivileged("serve", "--db", media / "memvm.db")
        # A writable folder, a file this user may not write.
        folder = shared / "folder"
        folder.mkdir()
        folder.chmod(0o777)
        fill(folder / "memvm.db")
        readable_by_all(folder / "memvm.db")
        read_only(folder / "memvm.db")
        file_only = run_unprivileged("serve", "--db", folder / "memvm.db")
    lines = []
    for done in (on_media, file_only):
        line = done.refusal()
        assert "not a usable SQLite database" not in line and "serve it as it is with --read-only" in line
        lines.append(line)
    assert "its folder cannot be written (read-only media?)" in lines[0]
    assert "the file cannot be written by this user" in lines[1]
