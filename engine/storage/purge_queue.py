"""One purge at a time per open database, shared by the forgets that arrive while one runs.

A purge (SQLite: the full-text index merged and the WAL emptied; PostgreSQL: a VACUUM of the
tables a page's text lives in) covers every delete committed before it starts, whoever made it.
So a forget waits for the first purge that starts after its delete, and forgets that arrive
together share one: twelve concurrent forgets run two purges one after the other, not twelve at
once, and a purge holds one connection, never the pool that reads and writes need.

Deletes also leave a mark in `purge_owed`, in their own transaction, which a finished purge
clears: `memvm gc` purges whenever a delete has happened since the last purge, even one that a
write made on its way (an expired page), or a forget whose purge could not finish.
"""

from collections.abc import Awaitable, Callable

import anyio
from memvm.engine.storage.statements import statement

# A delete's mark, made in the same transaction as the delete, on either backend.
OWE_PURGE = statement("purge_queue.owe", "INSERT INTO purge_owed (id) VALUES (1) ON CONFLICT DO NOTHING")
# Cleared by a purge in the step that starts it: a delete committed after that marks again.
PURGE_STARTED = statement("purge_queue.started", "DELETE FROM purge_owed")
IS_PURGE_OWED = statement("purge_queue.owed", "SELECT 1 FROM purge_owed LIMIT 1")


class PurgeQueue:
    """Runs `purge` for its callers one at a time; a caller shares any run that starts after it asks."""

    def __init__(self) -> None:
        self._lock = anyio.Lock()
        self._asked = 0  # callers so far, in order
        self._covered = 0  # callers that a finished run started after
        self._result = True

    async def run(self, purge: Callable[[], Awaitable[bool]]) -> bool:
        self._asked += 1
        mine = self._asked
        async with self._lock:
            if self._covered >= mine:
                return self._result  # a run that started after this caller asked has finished
            covering = self._asked
            # A run that raises covers nobody: the next caller in line runs one of its own.
            self._result = await purge()
            self._covered = covering
            return self._result
