"""What a database holds, read back through the storage seam as the operator's commands read it,
on either backend: its export's lines, and which of its memory tables hold rows."""

from pathlib import Path

import anyio
from memvm.engine.operations.tables import memory_tables
from memvm.engine.operations.transfer import export_read
from memvm.engine.storage.open import opened_database


async def export_of(db: Path | str, namespace: str | None = None) -> list[str]:
    """The lines `memvm export` writes of `db` (of `namespace`, or of all)."""
    lines: list[str] = []

    async def keep(batch: list[str]) -> None:
        lines.extend(batch)

    async with opened_database(db) as database, database.read(None) as conn:
        await export_read(conn, namespace, keep)
    return lines


def _holds_rows(db: Path | str) -> dict[str, bool]:
    """Each memory table of `db`, and whether it holds at least one row."""

    async def read() -> dict[str, bool]:
        async with opened_database(db) as database, database.read(None) as conn:
            return {
                table.name: await conn.one(f'SELECT 1 FROM "{table.name}" LIMIT 1') is not None
                for table in await memory_tables(conn)
            }

    return anyio.run(read)


def tables_holding_rows(db: Path | str) -> list[str]:
    """The memory tables of `db` that hold at least one row."""
    return [name for name, holds in _holds_rows(db).items() if holds]


def tables_without_rows(db: Path | str) -> list[str]:
    """The memory tables of `db` that hold none."""
    return [name for name, holds in _holds_rows(db).items() if not holds]
