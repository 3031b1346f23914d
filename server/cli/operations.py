"""What the operator's commands do: `memvm doctor`, `export`, `import`, `backup` and `gc` (each
command's line is its own module beside this one).

Each works on the file while servers use it, prints what it did, and on failure prints one line
starting with "memvm:" and exits 2 (doctor exits 1 when it finds a problem). None of them replaces
a file that exists unless told to (`export --force`).
"""

import argparse
import json
import os
import signal
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict
from pathlib import Path
from types import FrameType
from typing import TextIO

import anyio
from memvm.engine import Engine
from memvm.engine.errors import DatabaseRefused, MemvmError, StorageBusy, StorageError
from memvm.engine.names import NAME_RULE, is_name
from memvm.engine.operations.backup import BackupError, backup
from memvm.engine.operations.doctor import diagnose
from memvm.engine.operations.importers.formats import check_memvm_export
from memvm.engine.operations.transfer import (
    TransferError,
    check_schema,
    expired_pages,
    export_lines,
    import_from,
)
from memvm.engine.paths import DatabasePathError, check_db_path, database_named
from memvm.engine.storage.open import is_postgres_url, local_file, shown
from memvm.engine.storage.sqlite_file import connect_blocking, writable
from memvm.server.cli.doctor_report import hook_lines, mib, plain, report_lines
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
    if is_postgres_url(named):
        return _on_postgres(args, named)
    db = Path(named)
    try:
        check_db_path(db, create_folder=args.command == "import")
        # A terminated export or backup still removes its partial file on the way out.
        with _signals_end_cleanly():
            match args.command:
                case "doctor":
                    return _doctor(db, args.json)
                case "export":
                    return _export(db, args.out, args.namespace, force=args.force)
                case "import":
                    return _import(db, args.file)
                case _:
                    result = backup(db, Path(args.target).expanduser())
                    print(f"backed up {result.pages} pages ({mib(result.bytes)}) to {result.path}")
                    return 0
    except (TransferError, BackupError, DatabaseRefused, StorageError, DatabasePathError) as exc:
        return _fail(str(exc))
    except sqlite3.DatabaseError as exc:
        return _fail(f"cannot use {db}: {exc}")
    except BrokenPipeError:
        raise  # the reader left: main ends quietly, as programs in a pipe do
    except OSError as exc:
        return _os_failure(exc)


def _on_postgres(args: argparse.Namespace, url: str) -> int:
    """The same commands on a PostgreSQL database (see engine/operations/postgres_ops.py)."""
    try:
        from memvm.engine.operations import postgres_ops
    except ImportError:
        return _fail("PostgreSQL needs its driver, which is not installed: pip install 'memvm[postgres]'")
    try:
        with _signals_end_cleanly():
            match args.command:
                case "doctor":
                    found = postgres_ops.diagnose(url)
                    if args.json:
                        print(json.dumps({**asdict(found), "healthy": found.healthy}))
                    else:
                        from importlib.metadata import version

                        lines = postgres_ops.report_lines(found, version("memvm"), hook_lines(found))
                        print("\n".join(plain(line) for line in lines))
                    return 0 if found.healthy else 1
                case "export":
                    if (refused := _expired_collected(url, postgres_ops.expired_pages(url))) is not None:
                        return _fail(refused)
                    return _export_lines(
                        lambda: postgres_ops.export_lines(url, args.namespace), args.out, force=args.force
                    )
                case "import":
                    if args.file != "-" and not Path(args.file).is_file():
                        return _fail(f"there is no export at {args.file}")
                    if args.file != "-":
                        check_memvm_export(Path(args.file))
                    anyio.run(_create, url)  # a new database gets the schema; an old one is migrated
                    if args.file == "-":
                        rows = postgres_ops.import_lines(url, sys.stdin)
                    else:
                        with open(args.file, encoding="utf-8") as stream:
                            rows = postgres_ops.import_lines(url, stream)
                    print(f"imported {rows} rows into {shown(url)}")
                    return 0
                case _:
                    return _fail(
                        "memvm backup copies a SQLite file; back up a PostgreSQL database with pg_dump "
                        "(see docs/postgres.md, Backups)"
                    )
    except (TransferError, DatabaseRefused, StorageError) as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        raise
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
    except sqlite3.DatabaseError as exc:
        return _fail(f"cannot use {shown(db)}: {exc}")
    except ImportError:
        return _fail("PostgreSQL needs its driver, which is not installed: pip install 'memvm[postgres]'")
    except BrokenPipeError:
        raise
    except OSError as exc:
        return _os_failure(exc)


@contextmanager
def _signals_end_cleanly() -> Iterator[None]:
    """SIGTERM and SIGHUP end the command as Ctrl-C does: by an exception, so cleanups run."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _os_failure(exc: OSError) -> int:
    # A folder that cannot be written, a file that cannot be read: the OS's words, one line.
    where = f" {exc.filename}" if exc.filename else ""
    return _fail(f"cannot use{where}: {exc.strerror or exc}")


def _fail(message: str) -> int:
    print(f"memvm: {message}", file=sys.stderr)
    return 2


def _doctor(db: Path, as_json: bool) -> int:
    try:
        found = diagnose(db)
    except FileNotFoundError:
        return _fail(f"there is no database at {db}")
    if as_json:
        print(json.dumps({**asdict(found), "healthy": found.healthy}))
    else:
        print("\n".join(report_lines(found)))
    return 0 if found.healthy else 1


def _export(db: Path, out: str | None, namespace: str | None, *, force: bool) -> int:
    if not db.is_file():
        return _fail(f"there is no database at {db}")
    if (refused := _expired_collected(str(db), _expired_in_file(db))) is not None:
        return _fail(refused)
    conn = connect_blocking(db, read_only=not writable(db))
    try:
        return _export_lines(lambda: export_lines(conn, namespace), out, force=force)
    finally:
        conn.close()


def _export_lines(lines: Callable[[], Generator[str, None, None]], out: str | None, *, force: bool) -> int:
    """Write the export's `lines` to standard output or to `out`, and say how many rows."""
    target = Path(out).expanduser() if out is not None else None
    if target is not None and target.exists() and not force:
        return _fail(f"{target} already exists; name a new file, or pass --force to replace it")
    if target is None:
        rows = _write(lines(), sys.stdout)
        sys.stdout.flush()  # every row delivered (or the reader gone) before the count is claimed
    else:
        rows = _export_file(lines, target, force=force)
    print(f"exported {rows} rows" + (f" to {out}" if out else ""), file=sys.stderr)
    return 0


def _write(lines: Generator[str, None, None], stream: TextIO) -> int:
    count = -2  # header and end lines
    # Closed here, however the writing ends (a reader gone away): its read transaction ends while
    # its connection is still open.
    with closing(lines):
        for line in lines:
            stream.write(line + "\n")
            count += 1
    return count


def _export_file(lines: Callable[[], Generator[str, None, None]], target: Path, *, force: bool) -> int:
    """Write the export beside `target` under a name of its own, then move it into place: a failed
    export never looks like a whole one, and never touches another file."""
    try:
        # Readable by its owner only, like the database it copies.
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as exc:
        raise DatabasePathError(f"cannot write {target} ({exc.strerror})") from exc
    partial = Path(name)
    try:
        with open(fd, "w", encoding="utf-8") as stream:
            rows = _write(lines(), stream)
        if force:
            os.replace(partial, target)
        else:
            # A link fails if the name was taken meanwhile, where a rename would replace it.
            try:
                os.link(partial, target)
            except FileExistsError:
                raise DatabasePathError(
                    f"{target} already exists; name a new file, or pass --force"
                ) from None
    finally:
        partial.unlink(missing_ok=True)
    return rows


def _import(db: Path, source: str) -> int:
    if source != "-" and not Path(source).is_file():
        return _fail(f"there is no export at {source}")
    if source != "-":
        # Before the database is created: another tool's file (a forgotten --format) makes nothing.
        check_memvm_export(Path(source))
    anyio.run(_create, db)  # a new file gets the schema; an old one is checked and migrated
    conn = connect_blocking(db)
    try:
        if source == "-":
            rows = import_from(conn, sys.stdin)
        else:
            with open(source, encoding="utf-8") as stream:
                rows = import_from(conn, stream)
    finally:
        conn.close()
    print(f"imported {rows} rows into {db}")
    return 0


def _gc(named: str) -> int:
    """Delete every expired page through the engine, as its writes do, on either backend."""
    if (file := local_file(named)) is not None:
        try:
            check_db_path(file, create_folder=False)
        except DatabasePathError as exc:
            return _fail(str(exc))
        if not Path(named).is_file():
            return _fail(f"there is no database at {named}")
        if not writable(named):
            return _fail(
                f"cannot delete pages from {named}: this user cannot write it or its folder; run memvm gc "
                "as the user the servers run as"
            )

    try:
        deleted = anyio.run(_collect, named)
    except StorageBusy:
        return _fail("the database stayed busy with another writer; run memvm gc again in a moment")
    except (DatabaseRefused, StorageError) as exc:
        return _fail(str(exc))
    print(f"deleted {deleted} expired pages from {shown(named)}")
    return 0


async def _collect(named: str, purge: bool = True) -> int:
    engine = await Engine.open(named)
    try:
        return await engine.collect_expired(purge=purge)
    finally:
        await engine.close()


def _expired_in_file(db: Path) -> int:
    conn = connect_blocking(db, read_only=True)
    try:
        check_schema(conn)
        return expired_pages(conn)
    finally:
        conn.close()


def _expired_collected(named: str, waiting: int) -> str | None:
    """Before an export reads the memory, delete the `waiting` expired pages (expired is gone for
    every read, exports included); the line to refuse with when this user cannot."""
    if not waiting:
        return None
    if local_file(named) is not None and not writable(named):
        return (
            f"{waiting} expired pages wait to be deleted, and this user cannot write {named}: run memvm gc "
            "as the user the servers run as, then export"
        )
    try:
        anyio.run(_collect, named, False)  # an export reads rows: the purge can wait for the next one
    except StorageBusy:
        return "the database stayed busy with another writer; export again in a moment"
    return None


async def _create(db: Path | str) -> None:
    engine = await Engine.open(db)
    await engine.close()
