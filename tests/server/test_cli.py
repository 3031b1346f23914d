"""The `memvm` command in a pipe: a reader that stops early (`| head`) ends it quietly.

Each test runs the installed `memvm` script with Python's default buffering (output to a pipe is
written in blocks, the last of them at exit), reads part of its output or none, and closes the pipe.
"""

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from memvm.engine import Engine
from memvm.engine.models import IngestMessage, Role
from memvm.server.cli import EXIT_READER_GONE

from tests.conftest import long_text

MEMVM = str(Path(sys.executable).with_name("memvm"))
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
LIMIT = 120  # seconds, for a command on a loaded 2-core machine


def read_then_close(*arguments: str, lines: int) -> tuple[list[bytes], int, bytes]:
    """Run `memvm`, read `lines` lines of its output, close the pipe; the lines, exit status, stderr."""
    with subprocess.Popen(
        [MEMVM, *arguments], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV
    ) as process:
        assert process.stdout and process.stderr
        head = [process.stdout.readline() for _ in range(lines)]
        process.stdout.close()
        _, stderr = process.communicate(timeout=LIMIT)
    return head, process.returncode, stderr


def into_closed_pipe(*arguments: str) -> subprocess.CompletedProcess[str]:
    """Run `memvm` with its output going into a pipe whose reader has already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [MEMVM, *arguments],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            timeout=LIMIT,
        )
    finally:
        os.close(write_end)


async def fill(db: Path, messages: int) -> None:
    engine = await Engine.open(db)
    try:
        for start in range(0, messages, 100):
            batch = [
                IngestMessage(role=Role.USER, content=f"{n} {long_text(f'pump {n}')}")
                for n in range(start, start + 100)
            ]
            await engine.ingest(namespace="default", session="s", messages=batch)
    finally:
        await engine.close()


@pytest.mark.parametrize("command", [["doctor"], ["doctor", "--json"], ["backup", "{tmp}/copy.db"]])
def test_an_operator_command_into_a_closed_pipe_ends_quietly(tmp_path, command):
    db = tmp_path / "memvm.db"
    anyio.run(fill, db, 100)
    done = into_closed_pipe(*[part.format(tmp=tmp_path) for part in command], "--db", str(db))
    assert (done.returncode, done.stderr) == (EXIT_READER_GONE, "")


def test_an_export_to_a_reader_that_stops_early_ends_quietly_without_claiming_success(tmp_path):
    db = tmp_path / "memvm.db"
    anyio.run(fill, db, 300)  # far more than a pipe holds, so the export is still writing
    head, status, stderr = read_then_close("export", "--db", str(db), lines=3)
    assert head[0].startswith(b'{"format":"memvm-export"') and head[2].startswith(b'{"table":')
    assert (status, stderr) == (EXIT_READER_GONE, b"")
