"""Deleted text out of a SQLite file: the full-text index merged, the WAL emptied.

Deleting a row does not take its text out of the file. Three places keep it:

- the free space of the pages it sat in: every connection runs with `PRAGMA secure_delete=ON`
  (sqlite_db), so a delete or an update overwrites what it removes with zeros, in the same write;
- the FTS5 index: a delete adds a delete marker beside the old entry, and both hold the page's
  terms until a merge folds every segment into one (SQLite 3.40 has no FTS5 secure-delete);
- the WAL: the earlier versions of every page written stay in it until a checkpoint copies the
  newest into the file and the WAL is truncated.

The merge rewrites the whole index, in one write transaction that holds the write lock
meanwhile (figures in docs/storage.md, from tests/bench/forget_scale.py). FTS5's incremental merge
('merge' with a negative page count) would hold it a step at a time, but it starts over whenever a
write lands between two steps, so under a steady trickle of writes it never finished.
"""

import random
import sqlite3
import time

import aiosqlite
import anyio
from memvm.engine.storage import api

# Every segment of the index merged into one: entries that delete markers cancel are dropped.
_OPTIMIZE = "INSERT INTO pages_fts (pages_fts) VALUES ('optimize')"
_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"
_PAUSE_S = 0.02


async def merge_index(conn: api.Writes) -> None:
    """Merge the full-text index into one segment, dropping every deleted page's terms."""
    await conn.execute(_OPTIMIZE)


async def empty_wal(writer: aiosqlite.Connection, timeout_s: float) -> bool:
    """Copy the WAL into the file and truncate it to nothing; False if a reader holding an older
    snapshot kept that from happening for `timeout_s` (its frames are needed until it ends)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            async with writer.execute(_TRUNCATE) as cursor:
                row = await cursor.fetchone()
            if row is not None and row[0] == 0:
                return True
        except sqlite3.OperationalError as exc:
            # Another connection checkpointing at this moment; anything else is not ours to hide.
            if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(random.uniform(0, _PAUSE_S))
