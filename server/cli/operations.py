"""What the operator's commands do: `memvm doctor`, `export`, `import`, `backup` and `gc` (each
command's line is its own module beside this one), on either backend through the same code.

Each works on the database while servers use it, prints what it did, and on failure prints one
line starting with "memvm:" and exits 2 (doctor exits 1 when it finds a problem). None of them
replaces a file that exists unless told to (`export --force`). The database is opened in storage
(`opened_database`), which alone knows which backend it is; the work itself runs in an event loop
of its own (`anyio.run`).
"""

import argparse
import asyncio
import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import anyio
from memvm.engine import Engine
from memvm.engine.config import EngineConfig
from memvm.engine.errors import MemvmError, StorageBusy
from memvm.engine.names import NAME_RULE, is_name
from memvm.engine.operations.doctor import Findings, diagnose
from memvm.engine.operations.importers.formats import check_memvm_export
from memvm.engine.operations.transfer import TransferError, expired_pages
from memvm.engine.paths import DatabasePathError, check_db_path, database_named
from memvm.engine.storage.api import BackupResult
from memvm.engine.storage.open import failure_types, local_file, may_write, opened_database, shown
from memvm.server.cli.doctor_report import mib, report_lines
from memvm.server.cli.export_lines import export_to_file, export_to_stdout, import_lines
from memvm.server.cli.memory_files import is_memory_file_command, run_memory_file_command


def run_operation(args: argparse.Namespace) -> int:
    """Run the parsed command; its exit status, every failure said in one line."""
    named = database_named(args.db)
    namespace = getattr(args, "namespace", None)
    if namespace is not None and not is_name(namespace):
        # The shape memvm serve holds --namespace to: a name no server could serve is refused.
        return _fail(f"--namespace {namespace[:80]!r} is not a namespace name: {NAME_RULE}")
    if args.command == "gc":
        return _gc(named)
    if is_memory_file_command(args):
        return _memory_files(args, named)
    if args.command == "import" and args.namespace is not None:
        return _fail("--namespace is for the other import formats: memvm's export keeps each row's namespace")
    try:
        if (file := local_file(named)) is not None:
            check_db_path(file, create_folder=args.command == "import")
        # A terminated export or backup still removes its partial file on the way out.
        with _signals_end_cleanly():
            match args.command:
                case "doctor":
                    return _doctor(named, args.json, args.embedding_model)
                case "export":
                    return _export(named, args.out, args.namespace, force=args.force)
                case "import":
                    return _import(named, args.file)
                case _:
                    return _backup(named, Path(args.target).expanduser())
    except (TransferError, MemvmError, DatabasePathError) as exc:
        return _fail(str(exc))
    except failure_types() as exc:
        # What the database itself said no with (a damaged file, a server gone): its own words.
        return _fail(f"cannot use {shown(named)}: {exc}")
    except BrokenPipeError:
        raise  # the reader left: main ends quietly, as programs in a pipe do
    except OSError as exc:
        return _os_failure(exc)


def _memory_files(args: argparse.Namespace, db: str) -> int:
    """Another tool's files in, or markdown out (see memory_files.py), on either backend."""
    try:
        if (file := local_file(db)) is not None:
            check_db_path(file, create_folder=args.command == "import")
        with _signals_end_cleanly():
            done = run_memory_file_command(args, db)
        for warning in done.warnings:
            print(f"memvm: warning: {warning}", file=sys.stderr)
        print(done.line)
        return 0
    except (TransferError, MemvmError, DatabasePathError) as exc:
        return _fail(str(exc))
    except failure_types() as exc:
        return _fail(f"cannot use {shown(db)}: {exc}")
    except BrokenPipeError:
        raise
    except OSError as exc:
        return _os_failure(exc)


@contextmanager
def _signals_end_cleanly() -> Iterator[None]:
    """SIGTERM and SIGHUP end the command as Ctrl-C does, so cleanups run; it exits 128 + signal.

    In the event loop that is Ctrl-C itself: the loop's own SIGINT handler cancels the work at its
    next await, where every `finally` runs whole. An exception raised from the handler there would
    land between any two bytecodes of the loop's code, and could leave a database connection's
    thread started but never stopped: the process would then never exit. Outside a loop, the
    exception is raised at once. Only the main thread may set handlers; a command run on another (a
    test's worker thread) keeps the process's own.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if _loop_takes_ctrl_c():
            signal.raise_signal(signal.SIGINT)
        else:
            raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    except KeyboardInterrupt:
        if not received:
            raise
        raise SystemExit(128 + received[0]) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _loop_takes_ctrl_c() -> bool:
    """Whether an event loop runs on this thread with its own SIGINT handler (asyncio.Runner's)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return callable(handler := signal.getsignal(signal.SIGINT)) and handler is not signal.default_int_handler


def _os_failure(exc: OSError) -> int:
    # A folder that cannot be written, a file that cannot be read: the OS's words, one line.
    where = f" {exc.filename}" if exc.filename else ""
    return _fail(f"cannot use{where}: {exc.strerror or exc}")


def _fail(message: str) -> int:
    print(f"memvm: {message}", file=sys.stderr)
    return 2


def _missing(named: str) -> bool:
    """Whether `named` is a file that is not there (a served database is the server's to refuse)."""
    return local_file(named) is not None and not Path(named).is_file()


def _as_it_is(named: str) -> EngineConfig:
    """How the commands that only read open the database: read-only where this user may not write."""
    return EngineConfig(read_only=not may_write(named))


def _doctor(named: str, as_json: bool, embedding_model: str | None) -> int:
    if _missing(named):
        return _fail(f"there is no database at {named}")
    found = anyio.run(_diagnosed, named, embedding_model)
    if as_json:
        print(json.dumps(found.as_json()))
    else:
        print("\n".join(report_lines(found)))
    return 0 if found.healthy else 1


async def _diagnosed(named: str, embedding_model: str | None) -> Findings:
    # Opened as it is: doctor says what is wrong with a database rather than refusing to look.
    async with opened_database(named, _as_it_is(named), inspect=True) as db:
        return await diagnose(db, embedding_model=embedding_model)


def _export(named: str, out: str | None, namespace: str | None, *, force: bool) -> int:
    if _missing(named):
        return _fail(f"there is no database at {named}")
    if (refused := _expired_collected(named, anyio.run(_expired_waiting, named))) is not None:
        return _fail(refused)
    target = Path(out).expanduser() if out is not None else None
    if target is not None and target.exists() and not force:
        return _fail(f"{target} already exists; name a new file, or pass --force to replace it")
    config = _as_it_is(named)
    if target is None:
        rows = export_to_stdout(named, config, namespace)
    else:
        rows = export_to_file(named, config, namespace, target, force=force)
    print(f"exported {rows} rows" + (f" to {out}" if out else ""), file=sys.stderr)
    return 0


async def _expired_waiting(named: str) -> int:
    async with opened_database(named, _as_it_is(named), inspect=True) as db, db.read(None) as conn:
        return await expired_pages(conn)


def _import(named: str, source: str) -> int:
    if source != "-" and not Path(source).is_file():
        return _fail(f"there is no export at {source}")
    if source != "-":
        # Before the database is created: another tool's file (a forgotten --format) makes nothing.
        check_memvm_export(Path(source))
    anyio.run(_create, named)  # a new database gets the schema; an old one is checked and migrated
    rows = import_lines(named, source)
    print(f"imported {rows} rows into {shown(named)}")
    return 0


def _backup(named: str, target: Path) -> int:
    if _missing(named):
        return _fail(f"there is no database at {named}")
    result = anyio.run(_backed_up, named, target)
    print(f"backed up {result.pages} pages ({mib(result.bytes)}) to {result.path}")
    return 0


async def _backed_up(named: str, target: Path) -> BackupResult:
    async with opened_database(named, _as_it_is(named), inspect=True) as db:
        return await db.backup(target)


def _gc(named: str) -> int:
    """Delete every expired page through the engine, as its writes do, on either backend."""
    if (file := local_file(named)) is not None:
        try:
            check_db_path(file, create_folder=False)
        except DatabasePathError as exc:
            return _fail(str(exc))
        if not Path(named).is_file():
            return _fail(f"there is no database at {named}")
        if not may_write(named):
            return _fail(
                f"cannot delete pages from {named}: this user cannot write it or its folder; run memvm gc "
                "as the user the servers run as"
            )

    try:
        deleted = anyio.run(_collect, named)
    except StorageBusy:
        return _fail("the database stayed busy with another writer; run memvm gc again in a moment")
    except MemvmError as exc:
        return _fail(str(exc))
    print(f"deleted {deleted} expired pages from {shown(named)}")
    return 0


async def _collect(named: str, purge: bool = True) -> int:
    engine = await Engine.open(named)
    try:
        return await engine.collect_expired(purge=purge)
    finally:
        await engine.close()


def _expired_collected(named: str, waiting: int) -> str | None:
    """Before an export reads the memory, delete the `waiting` expired pages (expired is gone for
    every read, exports included); the line to refuse with when this user cannot."""
    if not waiting:
        return None
    if not may_write(named):
        return (
            f"{waiting} expired pages wait to be deleted, and this user cannot write {named}: run memvm gc "
            "as the user the servers run as, then export"
        )
    try:
        anyio.run(_collect, named, False)  # an export reads rows: the purge can wait for the next one
    except StorageBusy:
        return "the database stayed busy with another writer; export again in a moment"
    return None


async def _create(db: str) -> None:
    engine = await Engine.open(db)
    await engine.close()
