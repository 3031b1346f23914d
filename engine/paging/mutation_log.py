"""The mutation log: every change to a working set (a page mapped, promoted, demoted, unmapped,
pinned or forgotten), with the turn, who made it and why. Appended, never rewritten; each
namespace keeps its newest entries (engine/kept_logs.py).
"""

from dataclasses import dataclass

from memvm.engine.kept_logs import keep_newest_if_due
from memvm.engine.models.pages import Level
from memvm.engine.models.working_set import Actor, MutationKind
from memvm.engine.storage.api import Writes
from memvm.engine.storage.statements import template


def _rows(count: int) -> str:
    """`count` rows of VALUES: what each change has of its own is numbered, what its step shares
    (LogEntry) is bound once."""
    return ", ".join(
        f"(:namespace, :session, :page_id{i}, :turn, :kind{i}, :level_before{i}, :level_after{i}, "
        ":actor, :cause, :at)"
        for i in range(count)
    )


# Several changes in one statement, which says their numbers: the newest tells whether the log is
# due a trim, with no second trip to find it.
_LOG = template(
    "mutation_log.append",
    """
INSERT INTO mutation_log (namespace, session, page_id, turn, kind, level_before, level_after, actor, cause, at)
VALUES {rows}
RETURNING seq
""",
    rows=_rows(2),
)
# Well within SQLite's limit on a statement's parameters (32,766), four a row.
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
    shared = {
        "namespace": entry.namespace,
        "session": entry.session,
        "turn": entry.turn,
        "actor": entry.actor.value,
        "cause": entry.cause,
        "at": entry.at,
    }
    newest = 0
    for start in range(0, len(changes), _ROWS_PER_STATEMENT):
        batch = changes[start : start + _ROWS_PER_STATEMENT]
        each: dict[str, object] = {}
        for i, (page_id, kind, before, after) in enumerate(batch):
            each[f"page_id{i}"] = page_id
            each[f"kind{i}"] = kind.value
            each[f"level_before{i}"] = None if before is None else int(before)
            each[f"level_after{i}"] = None if after is None else int(after)
        written = await conn.all(_LOG.fill(rows=_rows(len(batch))), **shared, **each)
        newest = max(newest, *(int(row["seq"]) for row in written))
    await keep_newest_if_due(conn, "mutation_log", (entry.namespace,), newest, added=len(changes))
