"""The formats `memvm import` reads: the ImportSource each module of the registry defines.

An import reads and checks the whole source first (`read_source`), and only then opens the
database and writes: a file of the wrong format, or malformed, changes nothing, not even by
creating an empty database. A file refused for the format named is looked at once more
(`looks_like`): when its first bytes are another format's, the refusal says which `--format` to add.
"""

import importlib
from pathlib import Path

from memvm.engine.operations.importers.registry import FORMAT_MODULES, MEMVM_EXPORT_NAME
from memvm.engine.operations.importers.source_format import FirstBytes, ImportSource, Writing
from memvm.engine.operations.transfer import TransferError

# Every format, from the registry's list, in its order.
FORMATS: dict[str, ImportSource] = {
    name: importlib.import_module(module).FORMAT for name, module in FORMAT_MODULES.items()
}
MEMVM_EXPORT = FORMATS[MEMVM_EXPORT_NAME]
_SNIFF_BYTES = 64 * 1024


def read_source(source: str, path: Path) -> Writing:
    """Read and check the file (or folder) at `path` as the format named `source`; returns what
    writes it."""
    read = FORMATS[source].read
    if read is None:
        raise ValueError("memvm's own export fills an empty database: operations.transfer imports it")
    try:
        return read(path)
    except TransferError as exc:
        raise TransferError(with_hint(str(exc), source, path)) from exc


def with_hint(refusal: str, source: str, path: Path) -> str:
    """`refusal`, and which --format to add when the file looks like another format's."""
    guess = looks_like(path)
    if guess is None or guess.name == source:
        return refusal
    return f"{refusal}; this looks like {guess.described}: add --format {guess.name}"


def check_memvm_export(path: Path) -> None:
    """Refuse, before any database is opened or created, a file whose first line is not memvm's
    export header, saying which --format it looks like."""
    if looks_like(path) is not MEMVM_EXPORT:
        refusal = f"{path} is not a memvm export (its first line is no memvm-export header)"
        raise TransferError(with_hint(refusal, MEMVM_EXPORT.name, path))


def looks_like(path: Path) -> ImportSource | None:
    """The format the first bytes of `path` suggest, or None when they suggest none."""
    head = ""
    if not path.is_dir():
        try:
            with open(path, "rb") as stream:
                raw = stream.read(_SNIFF_BYTES)
            head = raw.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
        except OSError:
            if path.suffix.lower() != ".md":
                return None
    start = FirstBytes(path=path, head=head, compact="".join(head.split()))
    return next((source for source in FORMATS.values() if source.looks_like(start)), None)
