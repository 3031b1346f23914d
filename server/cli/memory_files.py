"""`memvm import --format server-memory|chatgpt|claude|markdown` and `memvm export --format markdown`.

Unlike memvm's own JSON lines, which fill an empty database exactly, these add memory to any
database, new or in use, through the engine: on SQLite and PostgreSQL alike, with secrets
redacted as on every other write. Failures are raised for operations.py to print in one line.
"""

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.operations.importers.counts import ImportCounts
from memvm.engine.operations.importers.formats import MEMVM_EXPORT, read_source
from memvm.engine.operations.markdown_export import MarkdownExport, export_markdown
from memvm.engine.operations.transfer import TransferError
from memvm.engine.storage.open import local_file, shown

# What `memvm serve` uses when given no --namespace.
DEFAULT_NAMESPACE = "default"


def is_memory_file_command(args: argparse.Namespace) -> bool:
    """Whether the command reads or writes one of these formats (else it is memvm's own JSON lines)."""
    return args.command in ("import", "export") and args.format not in (MEMVM_EXPORT.name, None)


@dataclass(frozen=True)
class Done:
    line: str  # what the command did
    warnings: list[str] = field(default_factory=list)  # what it left out, one line each


def run_memory_file_command(args: argparse.Namespace, db: str) -> Done:
    """Run the import or export; returns the line that says what it did, and what it left out."""
    if args.command == "export":
        if not args.out:
            raise TransferError("--format markdown writes a folder of files: name it with --out DIR")
        if (file := local_file(db)) is not None and not file.is_file():
            raise TransferError(f"there is no database at {db}")
        namespace = args.namespace or DEFAULT_NAMESPACE
        if args.out == "-":
            raise TransferError("--out - would be standard output, which cannot hold a folder: name a folder")
        out = Path(args.out).expanduser()
        done = anyio.run(_export, db, namespace, out, args.force)
        return Done(
            f"exported {done.sessions} sessions ({done.pages} pages) and {done.notes} notes "
            f"of namespace {namespace} to {out}"
        )
    if args.file == "-":
        raise TransferError(f"--format {args.format} reads a file or folder; name it instead of -")
    counts = anyio.run(_import, db, args.format, Path(args.file).expanduser(), args.namespace)
    return Done(f"imported into {shown(db)}: {counts.summary()}", [*counts.warnings, *counts.notices])


async def _import(db: str, source: str, path: Path, namespace: str | None) -> ImportCounts:
    # The source is read and checked before the database is opened (or created): a mistyped
    # name or the wrong file makes nothing.
    write = read_source(source, path)
    engine = await Engine.open(db)
    try:
        return await write(engine, namespace or DEFAULT_NAMESPACE)
    finally:
        await engine.close()


async def _export(db: str, namespace: str, out: Path, force: bool) -> MarkdownExport:
    # Read-only: exporting never migrates or writes the database it reads.
    engine = await Engine.open(db, EngineConfig(read_only=True))
    try:
        return await export_markdown(engine, namespace=namespace, out=out, force=force)
    finally:
        await engine.close()
