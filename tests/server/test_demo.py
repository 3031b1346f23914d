"""The demo's output: bold step titles on a terminal only, and a last line saying what to do next."""

import os
import sys

from memvm.server.demo import bold, what_next


def test_titles_are_bold_on_a_terminal_and_plain_in_a_file_or_with_no_color(monkeypatch, tmp_path):
    leader, follower = os.openpty()
    monkeypatch.delenv("NO_COLOR", raising=False)
    try:
        with os.fdopen(follower, "w") as terminal, (tmp_path / "out.txt").open("w") as file:
            monkeypatch.setattr(sys, "stdout", terminal)
            on_terminal = bold("step")
            monkeypatch.setenv("NO_COLOR", "1")
            asked_not_to = bold("step")
            monkeypatch.delenv("NO_COLOR")
            monkeypatch.setattr(sys, "stdout", file)
            in_a_file = bold("step")
    finally:
        os.close(leader)
    assert on_terminal == "\x1b[1mstep\x1b[0m"
    assert asked_not_to == in_a_file == "step"


def test_the_last_line_says_how_to_look_at_the_database_or_how_to_keep_one():
    assert what_next("/data/my demo.db", kept=True) == (
        "See what it stored in your browser: memvm ui --db '/data/my demo.db'"
    )
    temporary = what_next("/tmp/memvm-demo-x/demo.db", kept=False)
    assert "temporary and is gone" in temporary
    assert temporary.endswith("memvm demo --db demo.db && memvm ui --db demo.db")
