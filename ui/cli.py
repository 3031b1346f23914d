"""`memvm ui`: serve the browser view of one database and namespace on loopback, and print its URL.

The URL carries a token made for this start (as a notebook server's does), in its fragment:
whoever has the URL has the view, and the view only listens on this machine.
"""

import argparse
import secrets
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.errors import DatabaseRefused, StorageError
from memvm.engine.names import NAME_RULE, is_name
from memvm.engine.paths import DatabasePathError, check_db_path, database_named
from memvm.engine.storage.open import failure_types, local_file, shown
from memvm.resources.budget import with_reserve
from memvm.ui.app import create_app
from memvm.ui.http_guard import BACKLOG, guarded_server
from memvm.ui.security import one_token
from starlette.types import ASGIApp

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def main(args: argparse.Namespace) -> int:
    """Serve the view as the parsed `memvm ui` line says (server/cli/ui.py); its exit status."""
    if not is_name(args.namespace):
        print(f"memvm: --namespace takes {NAME_RULE}", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print("memvm: --port takes 0 (a free port) to 65535", file=sys.stderr)
        return 2
    if args.host not in _LOOPBACK:
        print(
            f"memvm: the view listens on loopback only ({', '.join(_LOOPBACK)}); "
            "to reach it from elsewhere, forward the port over SSH",
            file=sys.stderr,
        )
        return 2
    db = database_named(args.db)
    if (file := local_file(db)) is not None:
        try:
            check_db_path(file, create_folder=False)
        except DatabasePathError as exc:
            print(f"memvm: {exc}", file=sys.stderr)
            return 2
        if not Path(db).is_file() or Path(db).stat().st_size == 0:
            print(
                f"memvm: there is no memvm database at {db} (serve it once, or name another with --db)",
                file=sys.stderr,
            )
            return 2
    try:
        listener = listen(args.host, args.port)
    except OSError as exc:
        print(f"memvm: cannot listen on {args.host}:{args.port} ({exc.strerror})", file=sys.stderr)
        return 2
    try:
        with listener:
            anyio.run(_serve, db, args.namespace, args.host, listener, args.read_only)
    except KeyboardInterrupt:
        # Ctrl-C before the server took over the signals (while the database was opening).
        return 130
    except DatabaseRefused as exc:
        # The engine says why (corrupt, another program's, a newer memvm's, an unwritable folder).
        print(f"memvm: {shown(db)}: {exc}", file=sys.stderr)
        return 2
    except StorageError:
        return _unusable(db)
    except failure_types():
        return _unusable(db)
    return 0


def _unusable(db: str) -> int:
    print(
        f"memvm: {shown(db)} cannot be opened as a memvm database; run memvm doctor --db {shown(db)}",
        file=sys.stderr,
    )
    return 2


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket listening on `host`:`port`, before the URL is printed: whoever opens it at once
    is queued, not refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle off only on sockets it sees are TCP, and
    # with Nagle on, every answer on a kept-alive connection waited 40 ms for a delayed ACK.
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(BACKLOG)
    except OSError:
        listener.close()
        raise
    return listener


@asynccontextmanager
async def opened_view(
    db: str, namespace: str, token: str, *, read_only: bool = False
) -> AsyncIterator[ASGIApp]:
    """The view `memvm ui` serves: the database opened (read-only if asked), and the app over it
    that shows `namespace` to requests carrying the bearer `token`. The engine closes on exit."""
    engine = await Engine.open(db, with_reserve(EngineConfig(read_only=read_only)))
    engine.start_embedding()  # not when read-only: nothing is written then
    try:
        empty = await engine.view(namespace).page_count() == 0
        if empty:
            # Most often a mistyped --namespace: said, and served anyway (it may fill while watched).
            print(
                f"memvm: namespace {namespace} holds no pages yet in {shown(db)}", file=sys.stderr, flush=True
            )
        yield create_app(lambda: engine, namespace_of=one_token(token, namespace))
    finally:
        await engine.close()


async def _serve(db: str, namespace: str, host: str, listener: socket.socket, read_only: bool) -> None:
    token = secrets.token_urlsafe(24)
    async with opened_view(db, namespace, token, read_only=read_only) as app:
        port = listener.getsockname()[1]
        address = f"[{host}]" if ":" in host else host

        def announce() -> None:
            # In the fragment, which the browser never sends: the page's script takes it from there.
            print(f"http://{address}:{port}/#token={token}", flush=True)

        # The guards `memvm serve` has over HTTP: a deadline for headers, connections capped below
        # the file limit, and log lines that cannot flood.
        server = guarded_server(
            app, on_started=announce, log_level="warning", lifespan="off", access_log=False
        )
        await server.serve(sockets=[listener])
