"""The `memvm` command in a pipe: a reader that stops early (`| head`) ends it quietly.

Each test runs memvm with its output on a real pipe, with Python's default buffering for one
(written in blocks, the last of them at exit), reads part of its output or none, and closes the
pipe. In this process through memvm's entry point; the slow stage runs the installed script too.
"""

import os
import subprocess
import threading

import pytest
from memvm.server.cli.main import EXIT_READER_GONE

from tests.commands import LIMIT, command, run, started
from tests.conftest import long_text
from tests.seeding import seed, transcript

ENV = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
WAYS = ["in-process", pytest.param("process", marks=pytest.mark.slow)]


def into_closed_pipe(way: str, *arguments: str) -> tuple[int, str]:
    """Run `memvm` with its output going into a pipe whose reader has already gone: its exit
    status and stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    if way == "process":
        try:
            done = subprocess.run(
                command(*arguments),
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                env=ENV,
                timeout=LIMIT,
            )
        finally:
            os.close(write_end)
        return done.returncode, done.stderr
    with open(write_end, "w", encoding="utf-8") as stdout:
        done = run(*arguments, stdout=stdout)
    return done.status, done.stderr


def read_then_close(way: str, *arguments: str, lines: int) -> tuple[list[bytes], int, str]:
    """Run `memvm`, read `lines` lines of its output, close the pipe; the lines, exit status, stderr."""
    if way == "process":
        with subprocess.Popen(
            command(*arguments),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
        ) as process:
            assert process.stdout and process.stderr
            head = [process.stdout.readline() for _ in range(lines)]
            process.stdout.close()
            _, stderr = process.communicate(timeout=LIMIT)
        return head, process.returncode, stderr.decode()
    read_end, write_end = os.pipe()
    head: list[bytes] = []

    def reader() -> None:
        with open(read_end, "rb") as pipe:
            head.extend(pipe.readline() for _ in range(lines))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        with open(write_end, "w", encoding="utf-8") as stdout:
            done = run(*arguments, stdout=stdout)
    finally:
        thread.join(LIMIT)
    return head, done.status, done.stderr


def messages(count: int) -> list[str]:
    return [f"{n} {long_text(f'pump {n}')}" for n in range(count)]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("arguments", [["doctor"], ["doctor", "--json"], ["backup", "{tmp}/copy.db"]])
def test_an_operator_command_into_a_closed_pipe_ends_quietly(tmp_path, arguments, way):
    db = seed(tmp_path / "memvm.db", transcript(*messages(100)))
    status, stderr = into_closed_pipe(
        way, *[part.format(tmp=tmp_path) for part in arguments], "--db", str(db)
    )
    assert (status, stderr) == (EXIT_READER_GONE, "")
    if arguments[0] == "backup":  # the copy is made; only the line saying so found no reader
        assert (tmp_path / "copy.db").stat().st_size > 0


@pytest.mark.parametrize("way", WAYS)
def test_printed_hook_entries_into_a_closed_pipe_end_quietly(way):
    # `memvm hooks install claude-code --print | head -0`
    assert into_closed_pipe(way, "hooks", "install", "claude-code", "--print") == (EXIT_READER_GONE, "")


@pytest.mark.parametrize("way", WAYS)
def test_an_export_to_a_reader_that_stops_early_ends_quietly_without_claiming_success(tmp_path, way):
    # Far more than a pipe holds, so the export is still writing when the reader leaves.
    db = seed(tmp_path / "memvm.db", transcript(*messages(300)))
    head, status, stderr = read_then_close(way, "export", "--db", str(db), lines=3)
    assert head[0].startswith(b'{"format":"memvm-export"') and head[2].startswith(b'{"table":')
    assert (status, stderr) == (EXIT_READER_GONE, "")


def test_serve_with_a_client_on_stdin_says_nothing_on_stderr(tmp_path):
    # A host's pipe, not a terminal: its input ends at once, and nothing is said to a person.
    done = run("serve", "--db", tmp_path / "m.db", stdin=b"")
    assert (done.status, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.slow
def test_serve_typed_at_a_terminal_says_what_it_does_on_stderr_only(tmp_path):
    controller, terminal = os.openpty()
    try:
        with started("serve", "--db", tmp_path / "m.db", stdin=terminal, text=False) as process:
            assert process.stderr is not None and process.stdout is not None
            line = process.stderr.readline().decode()
            assert line.startswith("memvm: serving ") and "waiting for an MCP client on stdin" in line
            process.terminate()
            assert process.stdout.read() == b""  # stdout is the protocol's, never a person's
            process.wait(LIMIT)
    finally:
        os.close(controller)
        os.close(terminal)
