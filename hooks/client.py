"""`memvm hook HOST`, the process the host starts for each event: as little as possible happens here.

The host waits for the pre-tool hook on every tool call, and opening the engine costs eight bare
Python starts in imports alone. So this process, on the standard library only, hands the event to
a background process that keeps the engine open (`hooks/daemon.py`) and prints its answer. When
there is none (the first event, `--background-idle 0`, a platform without Unix sockets), the event
is answered here in full and a background process is started for the next one.

Whatever happens, the answer is valid JSON with exit code 0: exit code 2 means "block" to the
hosts, so it is never used by accident.
"""

import json
import os
import select
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any

from memvm.engine.paths import database_named
from memvm.engine.storage.open import local_file
from memvm.hooks.arguments import HookUsageError, hook_parser
from memvm.hooks.runtime import DB_VARIABLE, Endpoint, endpoint

# Events past this size are refused rather than read: a hook must not take the host's memory.
MAX_EVENT_BYTES = 32 * 1024 * 1024
# How long the host may take to write the event and close stdin.
_STDIN_S = 10.0
# A background process that failed to start is not started again sooner than this.
_RESPAWN_AFTER_S = 10.0
# On top of --wait-ms, what a background process may take to answer.
_ANSWER_MARGIN_S = 5.0


class _NoAnswer(Exception):
    """The background process took the event but gave no answer: it may have been applied."""


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    # The top of the hook: anything at all becomes "go on without memvm", never a blocked host.
    except Exception as exc:
        note = f"memvm hook: {type(exc).__name__} while handling the event; the host goes on without memvm"
        return _emit({}, note)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = hook_parser().parse_args(argv)
    except HookUsageError as exc:
        return _emit({}, f"memvm hook: {exc}; the host goes on without memvm for this event")
    named = database_named(args.db)
    # A file by its absolute path: the background process (keyed by it) serves one file.
    db = named if local_file(named) is None else os.path.abspath(named)
    raw = _read_event()
    if raw is None:
        return _stood_aside(args, db, b"", f"the event on stdin did not end within {_STDIN_S:.0f} s")
    if len(raw) > MAX_EVENT_BYTES:
        return _stood_aside(args, db, b"", f"the event is over {MAX_EVENT_BYTES} bytes, so it was not read")
    place = endpoint(db, args.wait_ms) if args.background_idle > 0 else None
    if place is not None:
        try:
            reply = _ask(place, args, raw)
        except _NoAnswer:
            return _stood_aside(args, db, raw, "the background process gave no answer in time")
        if reply is not None:
            return _emit(reply.get("answer") or {}, reply.get("note"))
    code = _answered_here(args, db, raw)
    if place is not None:
        _start_background(place, args, db)
    return code


def _read_event() -> bytes | None:
    """Stdin up to one byte past the limit, or None when it does not end in time.

    A host writes the whole event at once; a stdin left open must not hold the host's tool call
    until the host's own timeout (ten minutes for Claude Code).
    """
    if sys.platform == "win32":
        return sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + _STDIN_S
    while size <= MAX_EVENT_BYTES:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _ask(place: Endpoint, args: Any, raw: bytes) -> dict[str, Any] | None:
    """The background process's reply, or None when none is listening (or it asks to be replaced)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(1.0)
        try:
            conn.connect(str(place.socket))
        except OSError:
            return None
        conn.settimeout(args.wait_ms / 1000 + _ANSWER_MARGIN_S)
        header = {
            "host": args.host,
            "namespace": args.namespace,
            "recall_tokens": args.recall_tokens,
            "guards": args.guards,
            "guard_config": os.path.abspath(args.guard_config) if args.guard_config else None,
        }
        try:
            conn.sendall(json.dumps(header).encode() + b"\n" + raw)
            conn.shutdown(socket.SHUT_WR)
            data = _read_all(conn)
        except OSError as exc:
            raise _NoAnswer from exc
    finally:
        conn.close()
    if not data:
        # Closed without a word: it went away (replaced, or exited) before taking the event.
        return None
    try:
        reply = json.loads(data)
    except ValueError as exc:
        raise _NoAnswer from exc
    if not isinstance(reply, dict) or reply.get("replace"):
        return None
    return reply


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _answered_here(args: Any, db: str, raw: bytes) -> int:
    from memvm.hooks.cli import answer_here

    reply = answer_here(args, db, raw)
    return _emit(reply.answer, reply.stderr_line())


def _stood_aside(args: Any, db: str, raw: bytes, reason: str) -> int:
    from memvm.hooks.answer import note_skipped, stderr_line
    from memvm.hooks.cli import request_of

    note_skipped(db, request_of(args, raw), None, reason)
    return _emit({}, stderr_line(reason))


def _start_background(place: Endpoint, args: Any, db: str) -> None:
    """Start the background process for the next event, unless one was started moments ago."""
    try:
        if time.time() - place.spawned.stat().st_mtime < _RESPAWN_AFTER_S:
            return
    except OSError:
        pass
    import subprocess

    try:
        place.spawned.touch()
        command = [sys.executable, "-m", "memvm.hooks.daemon", "--wait-ms", str(args.wait_ms)]
        command += [
            "--idle",
            str(args.background_idle),
            "--socket",
            str(place.socket),
            "--lock",
            str(place.lock),
        ]
        # Its own session and no inherited pipes: the host waits for this process's stdout to
        # close, and must not wait for the background process too.
        subprocess.Popen(
            command,
            env={**os.environ, DB_VARIABLE: str(db)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
        )
    except OSError:
        pass


def _emit(answer: dict[str, Any], note: str | None) -> int:
    if note:
        print(note, file=sys.stderr)
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0
