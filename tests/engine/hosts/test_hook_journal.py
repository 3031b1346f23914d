"""The journal of events the hooks stood aside for, in a folder others may write to: a link planted
at its path (or where it is rewritten) is never written through, and a FIFO holds nobody.
Events go through the hook's own entry point; `memvm doctor` reads the journal back."""

import json
import os
from pathlib import Path

import pytest
from memvm.engine.hosts.hook_journal import journal_path, skipped_events

from tests.hooks import claude_code_events as cc
from tests.hooks.runner import run_hook, run_in_process, within

OUTSIDE = b"a file of the user's that the journal must never touch\n"


def _skipped_event(db: Path) -> tuple[dict, list[str]]:
    """An event memvm stands aside for (one it does not know), which the journal records."""
    return run_hook("claude-code", db, {**cc.prompt("hello"), "hook_event_name": "Bogus"})


def _outside(tmp_path: Path) -> Path:
    target = tmp_path / "elsewhere" / "precious.txt"
    target.parent.mkdir()
    target.write_bytes(OUTSIDE)
    return target


def _journal_lines(count: int) -> bytes:
    line = {
        "at": 1.0,
        "host": "claude-code",
        "session": "s",
        "event": "e",
        "guard": False,
        "reason": "r" * 200,
    }
    return b"".join(json.dumps({**line, "session": f"s{n}"}).encode() + b"\n" for n in range(count))


def test_a_link_planted_at_the_journal_is_not_written_through_and_the_event_is_answered(tmp_path):
    db, target = tmp_path / "m.db", _outside(tmp_path)
    journal_path(db).symlink_to(target)
    answer, errors = _skipped_event(db)
    assert answer == {} and len(errors) == 1
    assert target.read_bytes() == OUTSIDE and journal_path(db).is_symlink()
    assert skipped_events(db) == []  # nor read through


def test_a_dangling_link_at_the_journal_creates_nothing_where_it_points(tmp_path):
    db, target = tmp_path / "m.db", tmp_path / "elsewhere" / "new.txt"
    target.parent.mkdir()
    journal_path(db).symlink_to(target)
    assert _skipped_event(db)[0] == {}
    assert not target.exists()


def test_a_full_journal_is_cut_to_its_newest_half_without_following_a_planted_temporary_link(tmp_path):
    db, target = tmp_path / "m.db", _outside(tmp_path)
    journal = journal_path(db)
    journal.write_bytes(_journal_lines(1_200))  # past the journal's 256 KiB
    # Where a fixed temporary name would be: a link planted there to the user's file.
    journal.with_name(journal.name + ".tmp").symlink_to(target)
    answer, errors = _skipped_event(db)
    assert answer == {} and len(errors) == 1
    assert target.read_bytes() == OUTSIDE
    found = skipped_events(db)
    assert [entry.session for entry in found[:1]] == ["s600"] and found[-1].host == "claude-code"
    assert len(found) == 601 and not journal.is_symlink()
    # Nothing is left behind but the journal, its planted link and the database's own files.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [journal.name + ".tmp"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a platform without FIFOs")
def test_a_fifo_at_the_journal_holds_neither_the_hook_nor_doctor(tmp_path):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("hello"))  # a database for doctor to read
    os.mkfifo(journal_path(db))
    answer = within(30, lambda: _skipped_event(db), journal_path(db))
    assert answer is not None and answer[0] == {}
    # What doctor reads of it, in a thread that a FIFO could hold; then doctor itself.
    assert within(30, lambda: skipped_events(db), journal_path(db)) == []
    assert run_in_process(["doctor", "--db", str(db)])[0] == 0
