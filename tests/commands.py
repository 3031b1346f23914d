"""Running the `memvm` command: in this process, as a real process, and as a user that file modes
bind.

Most tests run a command in this process: `run("doctor", "--db", db)` calls the entry point the
installed script calls (memvm.server.cli.main.main) with the command's standard streams on files of
their own, and returns its exit status and what it printed. No interpreter starts and nothing is
imported again, so a command costs what its own work costs. Like the program, a command may start
its own event loop (`anyio.run`) and set signal handlers: call `run` from the main thread, outside a
running event loop (a plain `def` test), or from a worker thread of an async test
(`anyio.to_thread.run_sync`), where the command keeps the process's signal handlers.

The slow stage also starts the real program (`command`, `run_process`, `started`): for what only
a process shows, such as signals, pipes between processes and a server's port.

`run_unprivileged` runs a command as a user whom file modes bind. As root (as in CI, where root
would write a read-only folder regardless) it runs in a forked copy of this process that drops to
the `nobody` user first: the copy has every module it needs already imported, so it reads nothing
from the checkout or its virtual environment, which that user may not be able to reach.
"""

import importlib
import importlib.metadata
import io
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO

import anyio
import mcp_types
from anyio.abc import UNIXSocketStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from memvm.engine.config import EngineConfig
from memvm.engine.paging.tokens import start_loading
from memvm.server.cli.main import main
from memvm.server.cli.parser import COMMANDS

# The installed script, beside this interpreter.
MEMVM = Path(sys.executable).with_name("memvm")
# What of memvm.server every command imports before it is chosen: the console script and the table
# of commands. Nothing else of it, nor the MCP SDK, for a command that does not serve.
ENTRY_MODULES = ("memvm.server", "memvm.server.cli", "memvm.server.cli.main", "memvm.server.cli.parser")
LIMIT = 120  # seconds a command may take on a loaded 2-core machine
NOBODY = 65534

Argument = str | Path
# What an MCP client reads from and writes to (the SDK's transport streams).
Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


@dataclass(frozen=True)
class Done:
    """What a command left: its exit status and what it wrote to stdout and stderr."""

    status: int
    stdout: str
    stderr: str

    def refusal(self) -> str:
        """The one line a command refused with: exit status 2, nothing on stdout, no traceback."""
        assert "Traceback" not in self.stderr, self.stderr
        assert (self.status, self.stdout) == (2, ""), (self.status, self.stdout, self.stderr)
        (line,) = self.stderr.strip().splitlines()
        assert line.startswith("memvm: "), line
        return line


def run(*arguments: Argument, stdin: str | bytes = b"", stdout: TextIO | None = None) -> Done:
    """`memvm ARGUMENTS` in this process, `stdin` on its standard input.

    Its output is returned, or written to `stdout` when given (a pipe's end, to read it while the
    command runs). An exception the program would die of is raised here, where pytest shows it.
    """
    with _standard_streams(stdin, stdout) as streams, _logging_as_at_start():
        status = _called(arguments)
        out, err = streams()
    return Done(status, out, err)


def run_unprivileged(*arguments: Argument) -> Done:
    """`memvm ARGUMENTS` as a user whom file modes bind: `nobody` in a forked copy of this process
    when this is root, this user in this process otherwise."""
    if os.geteuid() != 0:
        return run(*arguments)
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    with open(os.devnull, "rb") as nothing:
        pid = _fork(arguments, user=NOBODY, streams=(nothing.fileno(), out_write, err_write))
    os.close(out_write)
    os.close(err_write)
    output = _read_until_closed(pid, [out_read, err_read])
    status = _waited(pid, time.monotonic() + LIMIT)
    return Done(status, output[out_read].decode(), output[err_read].decode())


@contextmanager
def serving_unprivileged(*arguments: Argument) -> Iterator[socket.socket]:
    """`memvm serve ARGUMENTS` over stdio, as the user `run_unprivileged` runs as, in a forked copy
    of this process; its stdin and stdout are one socket, whose other end is yielded (talk MCP over
    it with `mcp_over`). At the end its input ends, and it must exit 0 without a traceback."""
    ours, theirs = socket.socketpair()
    err_read, err_write = os.pipe()
    user = NOBODY if os.geteuid() == 0 else None
    pid = _fork(("serve", *arguments), user=user, streams=(theirs.fileno(), theirs.fileno(), err_write))
    theirs.close()
    os.close(err_write)
    try:
        yield ours
    finally:
        ours.shutdown(socket.SHUT_WR)  # its input ends (a close would not: the child has a copy)
        ours.close()
        stderr = _read_until_closed(pid, [err_read])[err_read].decode()
        status = _waited(pid, time.monotonic() + LIMIT)
    assert status == 0 and "Traceback" not in stderr, stderr


@asynccontextmanager
async def mcp_over(connection: socket.socket) -> AsyncIterator[Streams]:
    """An MCP client transport over a connected socket, framed as stdio is: one JSON-RPC message a
    line: `mcp.Client(mcp_over(connection))`. The socket stays open for its owner to close."""
    stream = await UNIXSocketStream.from_socket(os.dup(connection.fileno()))
    incoming_in, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_out = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with incoming_in:
            buffered = b""
            async for chunk in stream:
                *lines, buffered = (buffered + chunk).split(b"\n")
                for line in lines:
                    message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    await incoming_in.send(SessionMessage(message))

    async def write() -> None:
        async with outgoing_out:
            async for message in outgoing_out:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stream.send(text.encode() + b"\n")

    async with stream, anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield incoming, outgoing
        finally:
            group.cancel_scope.cancel()


def command(*arguments: Argument) -> list[str]:
    """The argv that starts the installed `memvm` as a real process."""
    return [str(MEMVM), *map(str, arguments)]


def run_process(*arguments: Argument, stdin: bytes = b"", env: Mapping[str, str] | None = None) -> Done:
    """`memvm ARGUMENTS` as a real process, `stdin` on its standard input."""
    done = subprocess.run(command(*arguments), input=stdin, capture_output=True, timeout=LIMIT, env=env)
    return Done(done.returncode, done.stdout.decode(), done.stderr.decode())


@contextmanager
def started(*arguments: Argument, **popen: Any) -> Iterator["subprocess.Popen[str]"]:
    """`memvm ARGUMENTS` as a running process, stdout and stderr piped as text unless `popen` says
    otherwise; killed at the end if it is still running."""
    options: dict[str, Any] = {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "text": True,
        **popen,
    }
    with subprocess.Popen(command(*arguments), **options) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()


@contextmanager
def _standard_streams(stdin: str | bytes, stdout: TextIO | None) -> Iterator[Callable[[], tuple[str, str]]]:
    """sys.stdin, stdout and stderr on temporary files, as a process's would be on its pipes (each
    with a file descriptor); yields a function that reads back what was written."""
    given = stdin.encode() if isinstance(stdin, str) else stdin
    with (
        tempfile.TemporaryFile() as raw_in,
        tempfile.TemporaryFile() as raw_out,
        tempfile.TemporaryFile() as raw_err,
    ):
        raw_in.write(given)
        raw_in.seek(0)
        streams = (
            _text(raw_in),
            stdout if stdout is not None else _text(raw_out),
            _text(raw_err, errors="backslashreplace", line_buffering=True),
        )
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = streams

        def written() -> tuple[str, str]:
            for stream in streams[1:]:
                stream.flush()
            return _read(raw_out), _read(raw_err)

        try:
            yield written
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            for stream in (streams[0], streams[2]) if stdout is not None else streams:
                with suppress(ValueError):  # closed by the command
                    stream.detach()


def _text(raw: IO[bytes], **options: Any) -> TextIO:
    return io.TextIOWrapper(raw, encoding="utf-8", **options)


def _read(raw: IO[bytes]) -> str:
    raw.seek(0)
    return raw.read().decode("utf-8", errors="backslashreplace")


@contextmanager
def _logging_as_at_start() -> Iterator[None]:
    """The root logger as a fresh process has it: no handlers, so that warnings reach the command's
    stderr (through Python's last-resort handler) rather than pytest's log capture."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers, root.level = [], logging.WARNING
    try:
        yield
    finally:
        root.handlers, root.level = handlers, level


def _called(arguments: tuple[Argument, ...]) -> int:
    """main(argv)'s exit status, as the interpreter makes one of what it returns or raises."""
    try:
        return main([str(argument) for argument in arguments])
    except SystemExit as exc:  # argparse's refusals, and the signals an operation turns into exits
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1


# Modules the commands import only when they need them: a forked copy run as another user could
# not read them from a virtual environment that user cannot reach.
_LATE_IMPORTS = (
    *(command.module for command in COMMANDS),
    "memvm.server.cli.serve_start",
    "memvm.server.cli.operations",
    "memvm.ui.cli",
    "memvm.server.app",
    "memvm.resources.budget",
    "memvm.engine.storage.sqlite_db",
    "mcp.server.stdio",
)
# Distributions whose metadata the commands read (doctor reports memvm's version).
_METADATA = ("memvm",)


def _fork(arguments: tuple[Argument, ...], *, user: int | None, streams: tuple[int, int, int]) -> int:
    """The pid of a forked copy of this process that runs `memvm ARGUMENTS` on the file descriptors
    `streams` (stdin, stdout, stderr) as `user` (or this user), and exits with its status."""
    for name in _LATE_IMPORTS:
        importlib.import_module(name)
    start_loading(EngineConfig().encoding).result()  # built from files of the virtual environment
    metadata = _RememberedMetadata(_METADATA)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:  # the copy never returns into the test run
        for target, fd in enumerate(streams):
            os.dup2(fd, target)
        sys.stdin = _text(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
        sys.stdout = _text(io.BufferedWriter(io.FileIO(1, "w", closefd=False)))
        sys.stderr = _text(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
            errors="backslashreplace",
            line_buffering=True,
        )
        logging.getLogger().handlers = []
        os.chdir("/")
        if user is not None:
            sys.meta_path.insert(0, metadata)
            os.setgroups([])
            os.setresgid(user, user, user)
            os.setresuid(user, user, user)
        status = _called(arguments)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError):
                stream.flush()
        os._exit(status)


def _read_until_closed(pid: int, fds: list[int]) -> dict[int, bytes]:
    """Everything written to the pipes `fds` until the child closes them (its exit); the child is
    killed if that takes longer than LIMIT."""
    chunks: dict[int, list[bytes]] = {fd: [] for fd in fds}
    deadline = time.monotonic() + LIMIT
    with selectors.DefaultSelector() as selector:
        for fd in fds:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"memvm did not finish within {LIMIT} s")
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    chunks[key.fd].append(chunk)
                else:
                    selector.unregister(key.fd)
                    os.close(key.fd)
    return {fd: b"".join(parts) for fd, parts in chunks.items()}


def _waited(pid: int, deadline: float) -> int:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"memvm did not exit within {LIMIT} s")
        time.sleep(0.01)


class _Remembered(importlib.metadata.Distribution):
    """A distribution's metadata, read while it could be."""

    def __init__(self, texts: dict[str, str]) -> None:
        self._texts = texts

    def read_text(self, filename: str) -> str | None:
        return self._texts.get(filename)

    def locate_file(self, path: Any) -> Path:
        return Path(path)


class _RememberedMetadata(importlib.metadata.DistributionFinder):
    """Finds the metadata of `names`, read now, for a user who could not read it where it is."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._found: dict[str, importlib.metadata.Distribution] = {}
        for name in names:
            installed = importlib.metadata.distribution(name)
            texts = {file: installed.read_text(file) for file in ("METADATA", "PKG-INFO", "entry_points.txt")}
            self._found[importlib.metadata.Prepared.normalize(name)] = _Remembered(
                {file: text for file, text in texts.items() if text is not None}
            )

    def find_spec(self, *args: Any) -> None:
        return None  # metadata only: modules are found as ever

    def find_distributions(
        self,
        context: importlib.metadata.DistributionFinder.Context | None = None,
    ) -> Iterator[importlib.metadata.Distribution]:
        if context is None or context.name is None:
            return iter(self._found.values())
        found = self._found.get(importlib.metadata.Prepared.normalize(context.name))
        return iter([found] if found is not None else [])
