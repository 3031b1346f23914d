"""The mutation log: every change to a working set (a page mapped, promoted, demoted, unmapped,
pinned or forgotten), with the turn, who made it and why. Appended, never rewritten; each
namespace keeps its newest entries (engine/kept_logs.py).
"""

from dataclasses import dataclass

from memvm.engine.kept_logs import keep_newest_if_due
from memvm.engine.models.pages import Level
from memvm.engine.models.working_set import Actor, MutationKind
from memvm.engine.storage.api import Writes

# Several changes in one statement, which says their numbers: the newest tells whether the log is
# due a trim, with no second trip to find it.
_LOG = """
INSERT INTO mutation_log (namespace, session, page_id, turn, kind, level_before, level_after, actor, cause, at)
VALUES {rows}
RETURNING seq
"""
_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# Well within SQLite's limit on a statement's parameters (32,766), ten a row.
_ROWS_PER_STATEMENT = 500

# One change: the page, what happened, its level before and after (None: not mapped).
Change = tuple[str, MutationKind, Level | None, Level | None]


@dataclass(frozen=True)
class LogEntry:
    """What every change of one step shares: where, when, who and why."""

    namespace: str
    session: str
    turn: int
    actor: Actor
    cause: str
    at: float


async def append_changes(conn: Writes, entry: LogEntry, changes: list[Change]) -> None:
    """Append `changes` in order, and let the oldest entries go when the namespace has too many."""
    if not changes:
        return
    rows = [
        (
            entry.namespace,
            entry.session,
            page_id,
            entry.turn,
            kind.value,
            None if before is None else int(before),
            None if after is None else int(after),
            entry.actor.value,
            entry.cause,
            entry.at,
        )
        for page_id, kind, before, after in changes
    ]
    newest = 0
    for start in range(0, len(rows), _ROWS_PER_STATEMENT):
        batch = rows[start : start + _ROWS_PER_STATEMENT]
        sql = _LOG.format(rows=", ".join([_ROW] * len(batch)))
        written = await conn.all(sql, [value for row in batch for value in row])
        newest = max(newest, *(int(row["seq"]) for row in written))
    await keep_newest_if_due(conn, "mutation_log", (entry.namespace,), newest, added=len(changes))
