"""What one format `memvm import` reads is, as an object: adding a format is writing its module
and naming its `FORMAT` in formats.py's list, nothing else."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from memvm.engine import Engine
from memvm.engine.operations.importers.counts import ImportCounts

# What is left to do once the source is read: write it into a namespace.
Writing = Callable[[Engine, str], Awaitable[ImportCounts]]


@dataclass(frozen=True)
class FirstBytes:
    """The start of a source, as formats recognise it: its path, its first text with leading
    whitespace gone, and the same text with every whitespace gone."""

    path: Path
    head: str
    compact: str


@dataclass(frozen=True)
class ImportSource:
    name: str  # as `--format` takes it
    described: str  # as a refusal names it: "this looks like {described}"
    looks_like: Callable[[FirstBytes], bool]
    # Read and check the whole source (raising TransferError), and return what writes it. None for
    # memvm's own export, which fills an empty database through operations/transfer.py.
    read: Callable[[Path], Writing] | None
