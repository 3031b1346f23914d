"""The background process that answers one database's hook events with its engine kept open.

Started by the hook client (`hooks/client.py`) when no such process answers, detached from the
host. It reads one event per connection and writes back the reply that `memvm hook` would have
given in a process of its own; nothing about an event differs but the time it takes. It exits:
- after `--idle` seconds without an event;
- when its socket is removed or taken over (a newer process, or a cleaned runtime directory);
- when the database file it holds open is no longer the one at its path (deleted or replaced:
  writing on would write into a file nobody can read), telling that event's client to answer
  in its own process;
- after the database itself failed, so that the next event opens it afresh.
"""

import argparse
import contextlib
import fcntl
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, SocketStream
from memvm.engine import Engine, EngineConfig
from memvm.engine.paths import check_db_path
from memvm.engine.storage.open import local_file
from memvm.hooks.answer import HookRequest, answer
from memvm.hooks.client import MAX_EVENT_BYTES
from memvm.hooks.hosts import HOSTS
from memvm.hooks.runtime import DB_VARIABLE, build_id

# How long a client may take to send its event.
_RECEIVE_S = 10.0
# How often the process looks at its socket, its database and the time since the last event.
_WATCH_S = 0.5
# How often the process checks that memvm's code is still what it started with.
_BUILD_CHECK_S = 5.0
# How long a new process waits for the one it replaces to let go of the lock.
_LOCK_WAIT_S = 5.0

_REPLACE = json.dumps({"replace": True}).encode() + b"\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memvm.hooks.daemon", description=__doc__.splitlines()[0])
    # Not on the command line, which any user may read (`ps`): a database URL may hold a password.
    # The process that starts this one hands it over in its environment (DB_VARIABLE).
    parser.add_argument("--wait-ms", type=int, required=True)
    parser.add_argument("--idle", type=float, required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--lock", required=True)
    return parser


@dataclass
class _Watch:
    db: str
    db_identity: tuple[int, int] | None
    socket: Path
    socket_identity: tuple[int, int] | None
    idle_s: float
    last_event: float
    build: str = ""
    build_checked: float = 0.0
    in_flight: int = 0
    stop: bool = False

    def should_stop(self) -> bool:
        if self.stop or _identity(self.socket) != self.socket_identity:
            return True
        if time.monotonic() - self.build_checked > _BUILD_CHECK_S:
            # memvm changed under it (an upgrade, an edit): newer events go to a newer process.
            self.build_checked = time.monotonic()
            if build_id() != self.build:
                return True
        if _db_identity(self.db) != self.db_identity:
            return True
        return self.in_flight == 0 and time.monotonic() - self.last_event > self.idle_s


def _db_identity(db: str) -> tuple[int, int] | None:
    """The file the process serves, to notice it replaced; a database server's stays what it is."""
    file = local_file(db)
    return None if file is None else _identity(file)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.db = os.environ.get(DB_VARIABLE)
    if not args.db:
        return 2  # started by hand without a database: nothing to serve
    lock = _take_lock(Path(args.lock))
    if lock is None:
        return 0  # another process answers for this database already
    try:
        anyio.run(_serve, args)
    finally:
        os.close(lock)
    return 0


def _take_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + _LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


async def _serve(args: argparse.Namespace) -> None:
    # What this process runs, read before it listens: a change made once a client can see the
    # socket is then always a change, never taken for the build the process started with.
    build = build_id()
    db = str(args.db)
    if (file := local_file(db)) is not None:
        check_db_path(file, create_folder=True)
    engine = await Engine.open(db, EngineConfig(busy_timeout_ms=max(0, args.wait_ms)))
    # The sentence encoder loads here, once, before the socket is there to be asked (until then
    # events are answered in their own process), and stays warm for every prompt's recall; pages
    # the hooks capture get their vectors while the process lives.
    await engine.meaning.encoder()
    engine.start_embedding()
    socket = Path(args.socket)
    ours: tuple[int, int] | None = None
    try:
        await anyio.Path(socket).unlink(missing_ok=True)
        listener = await anyio.create_unix_listener(socket)
        ours = _identity(socket)
        if ours is None:
            # Removed as soon as it was made (a cleaned runtime folder): nobody can reach this
            # process, and with no socket of its own to watch it would wait out its idle time.
            await listener.aclose()
            return
        with contextlib.suppress(FileNotFoundError):  # removed since: noticed at the first watch
            os.chmod(socket, 0o600)
        watch = _Watch(
            db=db,
            db_identity=_db_identity(db),
            socket=socket,
            socket_identity=ours,
            idle_s=args.idle,
            last_event=time.monotonic(),
            build=build,
            build_checked=time.monotonic(),
        )
        async with listener, anyio.create_task_group() as tasks:

            async def serve_one(stream: SocketStream) -> None:
                await _answer_one(stream, engine, watch)

            tasks.start_soon(listener.serve, serve_one, tasks)
            # Polled: a file replaced or removed by another process sends no event to wait for.
            while True:
                await anyio.sleep(_WATCH_S)
                if watch.should_stop():
                    break
            tasks.cancel_scope.cancel()
    finally:
        # Only its own socket: one that replaced it belongs to a newer process.
        if ours is not None and _identity(socket) == ours:
            await anyio.Path(socket).unlink(missing_ok=True)
        await engine.close()


async def _answer_one(stream: SocketStream, engine: Engine, watch: _Watch) -> None:
    watch.in_flight += 1
    watch.last_event = time.monotonic()
    try:
        async with stream:
            with anyio.fail_after(_RECEIVE_S):
                header, raw = await _receive(stream)
            if _db_identity(watch.db) != watch.db_identity:
                watch.stop = True
                await stream.send(_REPLACE)
                return
            request = HookRequest(
                host=HOSTS[header["host"]],
                namespace=str(header["namespace"]),
                recall_tokens=max(0, int(header["recall_tokens"])),
                guards=str(header["guards"]),
                guard_config=str(header["guard_config"]) if header["guard_config"] else None,
                raw=raw,
            )
            reply = await answer(lambda: _lent(engine), watch.db, request)
            # Decided before the reply is sent: a client that stopped waiting must not keep the
            # process going on a database that failed.
            if reply.engine_failed:
                watch.stop = True
            await stream.send(
                json.dumps({"answer": reply.answer, "note": reply.stderr_line()}).encode() + b"\n"
            )
    # A client that went away or sent nothing readable gets nothing; it answers in its own process.
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        TimeoutError,
        anyio.BrokenResourceError,
        anyio.EndOfStream,
    ):
        pass
    finally:
        watch.in_flight -= 1
        watch.last_event = time.monotonic()


async def _receive(stream: ByteReceiveStream) -> tuple[dict[str, Any], bytes]:
    received = bytearray()
    while len(received) <= MAX_EVENT_BYTES + 4096:
        try:
            received += await stream.receive()
        except anyio.EndOfStream:
            break
    line, _, raw = bytes(received).partition(b"\n")
    header = json.loads(line)
    if not isinstance(header, dict):
        raise ValueError("the header is not an object")
    return header, raw


@asynccontextmanager
async def _lent(engine: Engine) -> AsyncIterator[Engine]:
    """The process's engine, for one event: it stays open for the next."""
    yield engine


if __name__ == "__main__":
    raise SystemExit(main())
