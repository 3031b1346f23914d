"""How much of each log a namespace keeps: its newest rows, so that no client grows the file
without bound by calling tools.

The logs grow with every call: the mutation log with each page mapped or evicted, the tool call
log and what it teaches with each outcome recorded, the guard's record with each call let
through, the hooks' record with each host event. None is memory a person asked to keep; each
keeps the newest `rows` of its scope (a namespace, or one turn of a session), and the older go.

Finding the cut is a walk of `rows` index entries, so it runs on one write in `check_every`,
picked by a number the write already has (the row's sequence number, or a hash of its key): a
scope holds at most `rows` plus the rows of `check_every` writes. The aggregates (tool_stats,
error_patterns, success_values) are trimmed with the tool call log, by how recently each was used.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from memvm.engine.storage.api import Writes
from memvm.engine.storage.statements import Statement, statement


@dataclass(frozen=True)
class KeptLog:
    table: str
    # The columns that name one scope, and the column that orders its rows oldest first: an index
    # on (scope..., order) lets the cut be found without a sort.
    scope: tuple[str, ...]
    order: str
    rows: int
    check_every: int
    # Run before the oldest rows go, with the scope's columns and `cut`: unlink the rows kept that
    # point at them.
    unlink: tuple[Statement, ...] = ()

    def due(self, marker: int, added: int = 1) -> bool:
        """Whether the check runs after `added` rows were written, the last marked `marker` (a
        sequence number, or any stable integer of the row): when a multiple of `check_every` was
        passed."""
        return marker // self.check_every != (marker - added) // self.check_every


# A fix points at the failure it fixed (`fixes`), an earlier call: when that call goes, the link
# goes with it (the fix itself stays, with its delta). `fixed_by` points later, so it is kept
# unless a restored file says otherwise.
_UNLINK_FIXES = (
    statement(
        "kept_logs.unlink fixes",
        "UPDATE tool_calls SET fixes = NULL"
        " WHERE namespace = :namespace AND fixes IS NOT NULL AND fixes < :cut",
    ),
    statement(
        "kept_logs.unlink fixed_by",
        "UPDATE tool_calls SET fixed_by = NULL"
        " WHERE namespace = :namespace AND fixed_by IS NOT NULL AND fixed_by < :cut",
    ),
)

KEPT_LOGS: dict[str, KeptLog] = {
    log.table: log
    for log in (
        KeptLog("mutation_log", ("namespace",), "seq", rows=100_000, check_every=256),
        KeptLog("tool_calls", ("namespace",), "call_id", rows=100_000, check_every=64, unlink=_UNLINK_FIXES),
        KeptLog("tool_stats", ("namespace",), "last_at", rows=10_000, check_every=64),
        KeptLog("error_patterns", ("namespace",), "last_at", rows=10_000, check_every=64),
        KeptLog("success_values", ("namespace",), "last_at", rows=100_000, check_every=64),
        # Every rule counts within a turn, and budgets and caps stop at 10,000: a turn that has let
        # more calls through than this is counted by its newest.
        KeptLog("guard_calls", ("namespace", "session", "turn"), "rowid", rows=20_000, check_every=64),
        KeptLog("hook_events", ("namespace",), "at", rows=100_000, check_every=256),
    )
}


def _cut_statements(log: KeptLog) -> tuple[Statement, Statement]:
    """The oldest row `log` keeps (skipping its newest `rows` - 1), and the delete of those older."""
    within = " AND ".join(f"{column} = :{column}" for column in log.scope)
    return (
        statement(
            f"kept_logs.oldest kept in {log.table}",
            f"SELECT {log.order} AS cut FROM {log.table} WHERE {within}"
            f" ORDER BY {log.order} DESC LIMIT 1 OFFSET :skip",
        ),
        statement(
            f"kept_logs.drop older in {log.table}",
            f"DELETE FROM {log.table} WHERE {within} AND {log.order} < :cut",
        ),
    )


# Each log's statements, by table: its scope's columns name its parameters.
_CUTS = {table: _cut_statements(log) for table, log in KEPT_LOGS.items()}


async def keep_newest(conn: Writes, table: str, scope: Sequence[object]) -> None:
    """Delete the rows of `table` in `scope` older than its newest `rows`.

    Rows tied with the oldest kept one (the same time) stay: the bound is then passed by the ties,
    never by a row left behind at random.
    """
    log = KEPT_LOGS[table]
    oldest_kept_sql, drop_older_sql = _CUTS[table]
    within = dict(zip(log.scope, scope, strict=True))
    oldest_kept = await conn.one(oldest_kept_sql, **within, skip=log.rows - 1)
    if oldest_kept is None:
        return
    cut = oldest_kept["cut"]
    for unlink in log.unlink:
        await conn.execute(unlink, **within, cut=cut)
    await conn.execute(drop_older_sql, **within, cut=cut)


async def keep_newest_if_due(
    conn: Writes, table: str, scope: Sequence[object], marker: int, added: int = 1
) -> bool:
    """keep_newest when this write is the one in `check_every` that checks; whether it was."""
    if not KEPT_LOGS[table].due(marker, added):
        return False
    await keep_newest(conn, table, scope)
    return True
