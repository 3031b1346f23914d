"""What `memvm doctor` says of host hooks: per host session, when capture last wrote, and the
events memvm stood aside for (a pre-tool one is a guard that failed open).

A capture that silently stopped working (a host that changed its events, a database that keeps
failing) shows up as a session whose events have been skipped since its last write.
"""

from dataclasses import dataclass
from pathlib import Path

import anyio
from memvm.engine.hosts.hook_journal import SkippedEvent, skipped_events
from memvm.engine.storage.api import Reads
from memvm.engine.storage.statements import statement

# Skipped events in a row, after a session's last write, that make a problem rather than a blip.
STOPPED_AFTER = 3
# Sessions listed, most recent first.
_LISTED = 50

_CAPTURED = statement(
    "hook_report.captured",
    """
SELECT namespace, session, max(host) AS host, count(*) AS events, max(at) AS last_at,
       (SELECT event FROM hook_events AS latest WHERE latest.namespace = hook_events.namespace
        AND latest.session = hook_events.session ORDER BY at DESC LIMIT 1) AS last_event
FROM hook_events GROUP BY namespace, session
""",
)


@dataclass
class HookSession:
    host: str
    session: str
    namespace: str = ""  # "" for a session known only from skipped events
    events: int = 0  # events captured
    last_event: str = ""
    last_write_at: float | None = None
    skipped: int = 0
    guard_failed_open: int = 0
    skipped_since_write: int = 0
    last_skip_reason: str = ""
    last_skip_at: float | None = None

    @property
    def latest(self) -> float:
        return max(self.last_write_at or 0.0, self.last_skip_at or 0.0)


async def hook_sessions(conn: Reads | None, db: str | Path) -> tuple[list[HookSession], int]:
    """The host sessions seen, the most recent first, and the guards that failed open in all of
    them (the list is cut short). `conn` reads the database `db`, None when it cannot be read."""
    found: dict[tuple[str, str], HookSession] = {}
    by_session: dict[str, list[HookSession]] = {}
    if conn is not None:
        for row in await conn.all(_CAPTURED):
            namespace, session, host, events, last_at, last_event = row
            entry = HookSession(
                host=host, session=session, namespace=namespace, events=events, last_event=last_event
            )
            entry.last_write_at = last_at
            found[(namespace, session)] = entry
            by_session.setdefault(session, []).append(entry)
    for skipped in await anyio.to_thread.run_sync(skipped_events, db):
        _count(skipped, found, by_session)
    ordered = sorted(found.values(), key=lambda entry: entry.latest, reverse=True)
    return ordered[:_LISTED], sum(entry.guard_failed_open for entry in ordered)


def _count(
    skipped: SkippedEvent, found: dict[tuple[str, str], HookSession], by_session: dict[str, list[HookSession]]
) -> None:
    # The journal does not know the namespace (the event was not applied): the session's newest.
    known = by_session.get(skipped.session)
    if known:
        entry = max(known, key=lambda candidate: candidate.last_write_at or 0.0)
    else:
        entry = found.setdefault(
            ("", skipped.session), HookSession(host=skipped.host, session=skipped.session)
        )
        by_session.setdefault(skipped.session, []).append(entry)
    entry.skipped += 1
    entry.guard_failed_open += int(skipped.guard)
    if entry.last_write_at is None or skipped.at > entry.last_write_at:
        entry.skipped_since_write += 1
    entry.last_skip_reason = skipped.reason
    entry.last_skip_at = skipped.at


def stopped(entry: HookSession) -> bool:
    return entry.skipped_since_write >= STOPPED_AFTER
