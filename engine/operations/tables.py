"""The tables that hold memory, as the database's own catalogue lists them, on either backend:
what an export writes, an import fills and the row rules check; and the schema they are at."""

from dataclasses import dataclass

from memvm.engine.storage.api import Reads

# Kept by the engine's triggers from the pages, or its own ledgers: never memory, never exported.
# The pages' vectors are made again from their text after an import (engine/meaning).
_DERIVED = {
    "page_counts",
    "schema_migrations",
    "guard_verdicts",
    "purge_owed",
    "page_vectors",
    "pages_to_embed",
    "vector_counts",
}


@dataclass(frozen=True)
class Column:
    name: str
    # INTEGER, REAL, TEXT, or another type's name (a column the type rules leave alone).
    type: str
    not_null: bool


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    declared: tuple[Column, ...] = ()


@dataclass(frozen=True)
class Catalogue:
    """Every table the database holds, and those of them that hold memory."""

    names: frozenset[str]
    memory: list[Table]


async def catalogue(conn: Reads) -> Catalogue:
    """The database's tables, from its catalogue (`Dialect.columns`), in name order."""
    found: dict[str, tuple[list[Column], list[tuple[int, str]]]] = {}
    for table, column, key_place, declared, not_null in await conn.all(conn.dialect.columns):
        columns, key = found.setdefault(table, ([], []))
        columns.append(Column(column, str(declared or ""), bool(not_null)))
        if key_place:
            key.append((int(key_place), column))
    memory = [
        Table(
            name,
            tuple(column.name for column in columns),
            tuple(column for _, column in sorted(key)),
            tuple(columns),
        )
        for name, (columns, key) in found.items()
        if name not in _DERIVED and not conn.dialect.own_table(name)
    ]
    return Catalogue(frozenset(found), memory)


async def memory_tables(conn: Reads) -> list[Table]:
    """The tables that hold memory, with their stored columns (generated ones excluded) and key."""
    return (await catalogue(conn)).memory


async def schema_version(conn: Reads, tables: Catalogue) -> int | None:
    """The schema the database is at, or None when it holds no memvm schema."""
    if "schema_migrations" not in tables.names:
        return None
    row = await conn.one("SELECT max(version) FROM schema_migrations")
    return int(row[0]) if row and row[0] is not None else None
