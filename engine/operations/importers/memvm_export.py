"""memvm's own export, as a format `memvm import` recognises: its first line is the memvm-export
header. It is read by operations/transfer.py, which fills a database holding no memory yet."""

from memvm.engine.operations.importers.registry import MEMVM_EXPORT_NAME
from memvm.engine.operations.importers.source_format import FirstBytes, ImportSource


def _looks_like(start: FirstBytes) -> bool:
    first_line = start.head.split("\n", 1)[0]
    return start.head.startswith("{") and '"format":"memvm-export"' in "".join(first_line.split())


FORMAT = ImportSource(
    name=MEMVM_EXPORT_NAME, described="memvm's own export", looks_like=_looks_like, read=None
)
