"""memvm's own export between the database and a file or a pipe: the export's lines written to
standard output or to a new file, and an export's lines read into the database.

The work is engine/operations/transfer.py's, through the storage seam; here are the streams. Lines
go in and out a batch at a time on a worker thread, so the event loop never waits on a pipe.
"""

import os
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TextIO

import anyio
from memvm.engine.config import EngineConfig
from memvm.engine.operations.transfer import export_read, import_from
from memvm.engine.paths import DatabasePathError
from memvm.engine.storage.open import opened_database

# What an import reads of its file at once: about this many bytes of whole lines.
_READ_BYTES = 1 << 20


def export_to_stdout(named: str, config: EngineConfig, namespace: str | None) -> int:
    """Write the export to standard output; returns the rows."""
    rows = anyio.run(_export, named, config, namespace, sys.stdout)
    sys.stdout.flush()  # every row delivered (or the reader gone) before the count is claimed
    return rows


def export_to_file(
    named: str, config: EngineConfig, namespace: str | None, target: Path, *, force: bool
) -> int:
    """Write the export beside `target` under a name of its own, then move it into place: a failed
    export never looks like a whole one, and never touches another file. Returns the rows."""
    try:
        # Readable by its owner only, like the database it copies.
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as exc:
        raise DatabasePathError(f"cannot write {target} ({exc.strerror})") from exc
    partial = Path(name)
    try:
        with open(fd, "w", encoding="utf-8") as stream:
            rows = anyio.run(_export, named, config, namespace, stream)
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


async def _export(named: str, config: EngineConfig, namespace: str | None, stream: TextIO) -> int:
    async def write(lines: list[str]) -> None:
        await anyio.to_thread.run_sync(stream.write, "".join(line + "\n" for line in lines))

    # Opened as it is (nothing checked or changed): the export checks the schema itself.
    async with opened_database(named, config, inspect=True) as db, db.read(None) as conn:
        return await export_read(conn, namespace, write)


def import_lines(named: str, source: str) -> int:
    """Import the export at `source` (- for standard input) into the migrated database; the rows."""
    if source == "-":
        return anyio.run(_import, named, sys.stdin)
    with open(source, encoding="utf-8") as stream:
        return anyio.run(_import, named, stream)


async def _import(named: str, stream: TextIO) -> int:
    async with opened_database(named) as db, db.write() as conn:
        return await import_from(conn, _lines_of(stream))


async def _lines_of(stream: TextIO) -> AsyncIterator[str]:
    while lines := await anyio.to_thread.run_sync(stream.readlines, _READ_BYTES):
        for line in lines:
            yield line
