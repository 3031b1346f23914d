"""Deleted text out of PostgreSQL's tables, as far as PostgreSQL allows: a VACUUM after a forget.

A DELETE leaves the old row in its table as a dead tuple, and its index entries, until VACUUM
removes them; VACUUM does not run inside a transaction, so this runs after the forget commits, on
a connection of its own. What VACUUM frees is marked for reuse, not overwritten at once, and the
server's WAL (pg_wal, and any archive of it) keeps the deleted text until its segments are
recycled: docs/storage.md says so where it states what `forget` promises.
"""

from typing import Any

import psycopg
from psycopg import sql

# The tables forget deletes from or updates: the page and its texts, its search terms, its place in
# working sets, the values bound from a tool result, the user's numbers, the call that produced it.
PURGED_TABLES = (
    "pages",
    "page_texts",
    "page_terms",
    "working_set",
    "bindings",
    "binding_aliases",
    "result_numbers",
    "user_numbers",
    "tool_calls",
)

# And every table whose rows go with their page (ON DELETE CASCADE), whichever migration added it.
_REFERENCING_PAGES = """
SELECT DISTINCT c.relname AS name FROM pg_constraint AS k JOIN pg_class AS c ON c.oid = k.conrelid
WHERE k.contype = 'f' AND k.confrelid = 'pages'::regclass
"""


async def vacuum_purged(conn: psycopg.AsyncConnection[Any]) -> None:
    """VACUUM the purged tables on `conn`, which must be in autocommit mode. INDEX_CLEANUP ON: a
    VACUUM that finds few dead rows may otherwise leave their index entries (a page's terms)."""
    cursor = await conn.execute(_REFERENCING_PAGES)
    names = sorted({*PURGED_TABLES, *(row["name"] for row in await cursor.fetchall())})
    tables = sql.SQL(", ").join(sql.Identifier(name) for name in names)
    await conn.execute(sql.SQL("VACUUM (INDEX_CLEANUP ON) {}").format(tables))
