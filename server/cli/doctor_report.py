"""What `memvm doctor` prints: its findings as lines for a person, and the hooks' sessions.

On either backend the hooks' lines are the same; text that came from a host's events is shown as
data, never as terminal control.
"""

import re
from datetime import UTC, datetime

from memvm.engine.operations.doctor import Findings, meaning_line, memory_line


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def report_lines(found: Findings) -> list[str]:
    """What `memvm doctor` prints about a database, one finding a line; the storage names itself
    and its size (a SQLite file's pages and WAL, a PostgreSQL database's bytes)."""
    from importlib.metadata import version

    lines = [
        f"database    {found.path}",
        f"versions    memvm {version('memvm')}, {found.storage.engine}, "
        f"schema {found.schema_version} (this memvm: {found.schema_expected})",
        f"size        {found.storage.size}",
        memory_line(found),
        meaning_line(found),
        "checks      " + ", ".join(f"{name} {verdict}" for name, verdict in found.checks.items()),
    ]
    lines += hook_lines(found)
    lines += [f"problem     {plain(problem)}" for problem in found.problems]
    lines.append("healthy" if found.healthy else f"{len(found.problems)} problem(s) found")
    return lines


def _when(at: float | None) -> str:
    return "never" if at is None else datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def plain(text: str) -> str:
    """Text from the hooks' journal as one printable line: it is data, never terminal control."""
    return _UNPRINTABLE.sub("?", text)


def hook_lines(found: Findings) -> list[str]:
    """One line per host session the hooks saw, most recent first."""
    if not found.hook_sessions:
        return []
    lines = [
        f"hooks       {len(found.hook_sessions)} host sessions, {found.hooks_guard_failed_open} guard checks failed open"
    ]
    for entry in found.hook_sessions:
        line = (
            f"  {plain(entry.host) or '?'} {plain(entry.session) or '(unknown session)'}"
            + (f" in {entry.namespace}" if entry.namespace else "")
            + f": last capture {_when(entry.last_write_at)}"
            + (f" ({plain(entry.last_event)}, {entry.events} events)" if entry.events else "")
        )
        if entry.skipped:
            line += (
                f"; {entry.skipped} skipped, {entry.guard_failed_open} guard checks failed open, "
                f"last {_when(entry.last_skip_at)}: {plain(entry.last_skip_reason)}"
            )
        lines.append(line)
    return lines
