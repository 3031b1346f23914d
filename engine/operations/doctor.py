"""`memvm doctor`: the health of one database file, safe to run while servers use it.

Reads through its own short transactions, so serving processes go on writing. Every check that
fails becomes one plain sentence in `problems`; the file is never changed.
"""

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvm.engine.hosts.hook_report import HookSession, hook_sessions, stopped
from memvm.engine.operations.row_rules import violations
from memvm.engine.operations.transfer import memory_tables
from memvm.engine.storage.log_limits import LOG_CHARS_OF_NAMESPACE
from memvm.engine.storage.migrations import SCHEMA_VERSION
from memvm.engine.storage.sqlite_file import APPLICATION_ID, connect_blocking, wal_in_header, writable


@dataclass
class Findings:
    """What doctor finds in a database of either backend: versions, counts, checks, problems."""

    path: str
    schema_version: int = 0
    schema_expected: int = SCHEMA_VERSION
    namespaces: int = 0
    sessions: int = 0
    pages: int = 0
    tool_calls: int = 0
    # Pages past their expiry that no write has deleted yet: `memvm gc` deletes them.
    expired_waiting: int = 0
    hook_sessions: list[HookSession] = field(default_factory=list)
    hooks_guard_failed_open: int = 0
    checks: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems


def memory_line(found: Findings) -> str:
    """Doctor's line of counts, the same on both backends."""
    return (
        f"memory      {found.namespaces} namespaces, {found.sessions} sessions, {found.pages} pages "
        f"({found.expired_waiting} expired, waiting for memvm gc), {found.tool_calls} tool calls"
    )


# Expired pages not deleted yet, at the moment given, on either backend.
def expired_waiting_sql() -> str:
    # The doctor's own connection has no transaction moment for the expired_pages view to read.
    return f"SELECT count(*) FROM pages WHERE expires_at IS NOT NULL AND expires_at <= {time.time()!r}"


# The per-namespace page counts and lengths (search statistics) and the text kept outside pages
# (the quota's) are kept by triggers; they must agree with the rows. The namespaces where they do
# not, on either backend.
COUNTS_DRIFT = (
    "SELECT (SELECT count(*) FROM (SELECT namespace, count(*) AS n, sum(search_chars) AS chars FROM pages "
    "GROUP BY namespace) AS real LEFT JOIN page_counts USING (namespace) "
    "WHERE page_counts.pages IS DISTINCT FROM real.n OR page_counts.chars IS DISTINCT FROM real.chars) + "
    f"(SELECT count(*) FROM page_counts WHERE log_chars <> {LOG_CHARS_OF_NAMESPACE})"
)


def record_counts_drift(found: Findings, drift: int) -> None:
    found.checks["page_counts"] = "ok" if drift == 0 else f"{drift} namespaces off"
    if drift:
        found.problems.append(f"page counts disagree with the pages in {drift} namespaces")


@dataclass
class Diagnosis(Findings):
    """A SQLite file's findings, with its file, WAL and pages."""

    sqlite_version: str = sqlite3.sqlite_version
    journal_mode: str = ""
    file_bytes: int = 0
    wal_bytes: int = 0
    page_size: int = 0
    page_count: int = 0
    free_pages: int = 0


def diagnose(path: str | Path) -> Diagnosis:
    """Check the file at `path`; raises FileNotFoundError when there is none."""
    target = Path(path)
    if not target.is_file():
        raise FileNotFoundError(str(target))
    found = Diagnosis(path=str(target), file_bytes=target.stat().st_size)
    wal = target.with_name(target.name + "-wal")
    found.wal_bytes = wal.stat().st_size if wal.exists() else 0
    # Not mode=ro where it can be helped: the FTS5 check is phrased as an INSERT, and a read-only
    # open would also miss a WAL that only a writer may recover. Nothing is committed. A file that
    # cannot be written (a backup on read-only media) is checked read-only, as it is served.
    conn = connect_blocking(target, read_only=not writable(target))
    try:
        _file_checks(conn, found)
        if found.checks.get("integrity") == "ok" and found.checks.get("owner") == "ok":
            _memvm_checks(conn, found)
        _hook_checks(conn if found.schema_version == found.schema_expected else None, found)
    except sqlite3.DatabaseError as exc:
        found.problems.append(f"not a usable SQLite database ({exc})")
        # What the hooks met is in their journal beside the file, readable when the file is not.
        _hook_checks(None, found)
    finally:
        conn.close()
    return found


def _hook_checks(conn: sqlite3.Connection | None, found: Diagnosis) -> None:
    found.hook_sessions, found.hooks_guard_failed_open = hook_sessions(conn, Path(found.path))
    for entry in found.hook_sessions:
        if stopped(entry):
            found.problems.append(
                f"hook capture for {entry.host} session {entry.session or '(unknown)'} stopped: the last "
                f"{entry.skipped_since_write} events were skipped ({entry.last_skip_reason})"
            )


def _one(conn: sqlite3.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return row[0] if row else None


def _file_checks(conn: sqlite3.Connection, found: Diagnosis) -> None:
    found.journal_mode = str(_one(conn, "PRAGMA journal_mode"))
    if found.journal_mode != "wal" and wal_in_header(found.path):
        found.journal_mode = "wal"  # opened immutable, where SQLite reports "delete"
    found.page_size = int(_one(conn, "PRAGMA page_size") or 0)
    found.page_count = int(_one(conn, "PRAGMA page_count") or 0)
    found.free_pages = int(_one(conn, "PRAGMA freelist_count") or 0)
    verdict = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
    found.checks["integrity"] = "ok" if verdict == ["ok"] else "failed"
    if verdict != ["ok"]:
        found.problems.append(f"integrity_check failed: {'; '.join(verdict[:3])}")
    app_id = _one(conn, "PRAGMA application_id")
    objects = _one(conn, "SELECT count(*) FROM sqlite_schema")
    if app_id == APPLICATION_ID or (app_id == 0 and objects == 0):
        found.checks["owner"] = "ok"
    else:
        found.checks["owner"] = "foreign"
        found.problems.append("the file is a SQLite database of another program, not a memvm database")
    if found.journal_mode != "wal" and objects:
        found.problems.append(f"journal mode is {found.journal_mode}, not wal; serve it once to switch")


def _memvm_checks(conn: sqlite3.Connection, found: Diagnosis) -> None:
    if _one(conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'") == 0:
        found.problems.append("the file holds no memvm schema yet; serve it once to create it")
        return
    found.schema_version = int(_one(conn, "SELECT max(version) FROM schema_migrations") or 0)
    if found.schema_version != found.schema_expected:
        found.problems.append(
            f"schema version {found.schema_version}, this memvm expects {found.schema_expected}"
            + ("; serve it once to migrate" if found.schema_version < found.schema_expected else "")
        )
        return
    found.namespaces = int(_one(conn, "SELECT count(DISTINCT namespace) FROM sessions") or 0)
    found.sessions = int(_one(conn, "SELECT count(*) FROM sessions") or 0)
    found.pages = int(_one(conn, "SELECT count(*) FROM pages") or 0)
    found.tool_calls = int(_one(conn, "SELECT count(*) FROM tool_calls") or 0)
    found.expired_waiting = int(_one(conn, expired_waiting_sql()) or 0)

    dangling = conn.execute("PRAGMA foreign_key_check").fetchall()
    found.checks["foreign_keys"] = "ok" if not dangling else f"{len(dangling)} dangling"
    if dangling:
        found.problems.append(f"{len(dangling)} rows point at rows that are gone (foreign_key_check)")

    record_counts_drift(found, int(conn.execute(COUNTS_DRIFT).fetchone()[0]))

    # The rules import holds every row to: a row written by other means may break them.
    broken = violations(conn, [table.name for table in memory_tables(conn)])
    found.checks["rows"] = (
        "ok" if not broken else f"{len(broken)}{'+' if len(broken) >= 20 else ''} break rules"
    )
    found.problems += [f"{violation}" for violation in broken[:5]]

    found.checks["search_index"] = _search_index_check(conn)
    if not found.checks["search_index"].startswith("ok"):
        found.problems.append(f"the search index disagrees with the pages ({found.checks['search_index']})")


_READ_ONLY_SKIP = "ok (structure check skipped: read-only file)"


def _search_index_check(conn: sqlite3.Connection) -> str:
    # The index holds its content elsewhere (content='page_search', a view over the pages and their
    # texts), so FTS5's own check sees only itself on this SQLite; that every page is indexed, and
    # nothing else, is checked here.
    missing = _one(conn, "SELECT count(*) FROM pages WHERE rowid NOT IN (SELECT id FROM pages_fts_docsize)")
    stray = _one(conn, "SELECT count(*) FROM pages_fts_docsize WHERE id NOT IN (SELECT rowid FROM pages)")
    if missing or stray:
        return f"{missing} pages unindexed, {stray} stray entries"
    # FTS5 phrases its check as a write, so it needs the write lock: taken up front (a read that
    # turns into a write cannot wait for it), held only for the check; servers' writes wait and retry.
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "readonly" not in str(exc):
            raise
        return _READ_ONLY_SKIP
    try:
        conn.execute("INSERT INTO pages_fts (pages_fts) VALUES ('integrity-check')")
    except sqlite3.DatabaseError as exc:
        # An immutable open (read-only media) takes the write lock and refuses only the write.
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_READONLY:
            return _READ_ONLY_SKIP
        return "FTS5 integrity-check failed"
    finally:
        conn.execute("ROLLBACK")
    return "ok"
