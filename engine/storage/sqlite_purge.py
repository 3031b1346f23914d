"""Deleted text out of a SQLite file: the full-text index merged, the WAL emptied.

Deleting a row does not take its text out of the file. Three places keep it:

- the free space of the pages it sat in: every connection runs with `PRAGMA secure_delete=ON`
  (sqlite_db), so a delete or an update overwrites what it removes with zeros, in the same write;
- the FTS5 index: a delete adds a delete marker beside the old entry, and both hold the page's
  terms until a merge folds every segment into one (SQLite 3.40 has no FTS5 secure-delete);
- the WAL: the earlier versions of every page written stay in it until a checkpoint copies the
  newest into the file and the WAL is truncated.

The merge rewrites the whole index (about 0.5 s and 15 MB of index at 100,000 pages, measured with
tests/bench/forget_scale.py), so it runs in steps, each its own short write transaction: other
writers wait for a step, never for the whole merge.
"""

import random
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import aiosqlite
import anyio
from memvm.engine.storage import api

# Index pages (about 4 KB each) merged per write transaction: a tenth to a quarter of a second.
MERGE_STEP_PAGES = 1_000

# A negative count merges every segment, whatever its level, as 'optimize' does, but stops after
# that many pages of output; the index keeps the merge's place for the next step.
_MERGE_STEP = "INSERT INTO pages_fts (pages_fts, rank) VALUES ('merge', ?)"
_CHANGES = "SELECT total_changes() AS n"
_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"
_PAUSE_S = 0.02


async def merge_index(write: Callable[[], AbstractAsyncContextManager[api.Writes]]) -> int:
    """Merge the full-text index into one segment, dropping deleted entries; returns the steps.

    A step that writes (almost) nothing says the merge is complete: FTS5 itself counts a finished
    merge as one or no changes.
    """
    steps = 0
    while True:
        async with write() as conn:
            before = await _total_changes(conn)
            await conn.execute(_MERGE_STEP, (-MERGE_STEP_PAGES,))
            written = await _total_changes(conn) - before
        steps += 1
        if written < 2:
            return steps


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


async def _total_changes(conn: api.Writes) -> int:
    row = await conn.one(_CHANGES)
    assert row is not None  # a SELECT of a function yields one row
    return int(row["n"])
