"""`memvm doctor`: the health of one database, on either backend, safe to run while servers use it.

The backend checks its own storage first (a SQLite file's integrity, owner and journal; a
PostgreSQL server's indexes: `Database.diagnose`); the memory in it is then checked the same way
on both, here: its schema, its counts, the rows' keys and rules, and the search index. Everything
is read through short transactions, so serving processes go on writing. Every check that fails
becomes one plain sentence in `problems`; the database is never changed.
"""

from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
from memvm.engine.hosts.hook_report import HookSession, hook_sessions, stopped
from memvm.engine.meaning.model_files import MODEL_ID, why_unavailable
from memvm.engine.meaning.vector_store import progress
from memvm.engine.operations.row_rules import violations
from memvm.engine.operations.tables import catalogue, schema_version
from memvm.engine.storage.api import Database, Reads, StorageReport
from memvm.engine.storage.log_limits import LOG_CHARS_OF_NAMESPACE
from memvm.engine.storage.migrations import SCHEMA_VERSION
from memvm.engine.storage.statements import Statement, statement


@dataclass
class Findings:
    """What doctor finds in a database: versions, counts, checks, problems, and the storage's own
    report (its facts are fields of the JSON doctor prints)."""

    path: str
    schema_version: int = 0
    schema_expected: int = SCHEMA_VERSION
    namespaces: int = 0
    sessions: int = 0
    pages: int = 0
    tool_calls: int = 0
    # Pages past their expiry that no write has deleted yet: `memvm gc` deletes them.
    expired_waiting: int = 0
    # Search by meaning: the pages with a vector of the current model, those waiting for one, and
    # why the model cannot run (None: it can).
    pages_embedded: int = 0
    pages_waiting_embedding: int = 0
    embedding_model: str = MODEL_ID
    embedding_unavailable: str | None = None
    hook_sessions: list[HookSession] = field(default_factory=list)
    hooks_guard_failed_open: int = 0
    checks: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    storage: StorageReport = field(default_factory=lambda: StorageReport(engine="", size=""))

    @property
    def healthy(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        """The findings as doctor's JSON: every field, the storage's facts among them, and `healthy`."""
        found = asdict(self)
        found.pop("storage")
        return {**found, **self.storage.facts, "healthy": self.healthy}


def meaning_line(found: Findings) -> str:
    """Doctor's line on search by meaning: the model, and how far the pages' vectors have come."""
    if found.embedding_unavailable is not None:
        return f"meaning     off: {found.embedding_unavailable}; search matches words only"
    waiting = found.pages_waiting_embedding
    return (
        f"meaning     {found.embedding_model}: {found.pages_embedded} pages embedded, {waiting} waiting"
        + (" (a server embeds them as it runs; memvm embed does them now)" if waiting else "")
    )


def memory_line(found: Findings) -> str:
    """Doctor's line of counts, the same on both backends."""
    return (
        f"memory      {found.namespaces} namespaces, {found.sessions} sessions, {found.pages} pages "
        f"({found.expired_waiting} expired, waiting for memvm gc), {found.tool_calls} tool calls"
    )


# Expired pages not deleted yet, as of the reading transaction's moment.
_EXPIRED_WAITING = statement("doctor.expired waiting", "SELECT count(*) FROM expired_pages")
_NAMESPACES = statement("doctor.namespaces", "SELECT count(DISTINCT namespace) FROM sessions")
_SESSIONS = statement("doctor.sessions", "SELECT count(*) FROM sessions")
_PAGES = statement("doctor.pages", "SELECT count(*) FROM pages")
_TOOL_CALLS = statement("doctor.tool calls", "SELECT count(*) FROM tool_calls")


# The per-namespace page counts and lengths (search statistics) and the text kept outside pages
# (the quota's) are kept by triggers; they must agree with the rows. The namespaces where they do
# not.
COUNTS_DRIFT = statement(
    "doctor.counts drift",
    "SELECT (SELECT count(*) FROM (SELECT namespace, count(*) AS n, sum(search_chars) AS chars FROM pages "
    "GROUP BY namespace) AS real LEFT JOIN page_counts USING (namespace) "
    "WHERE page_counts.pages IS DISTINCT FROM real.n OR page_counts.chars IS DISTINCT FROM real.chars) + "
    f"(SELECT count(*) FROM page_counts WHERE log_chars <> {LOG_CHARS_OF_NAMESPACE})",
)


async def diagnose(db: Database, *, embedding_model: str | None = None) -> Findings:
    """Check the database `db`: its storage, then the memory in it, then what the hooks met; and
    whether the sentence encoder (from `embedding_model`, else the installed one) can run."""
    found = Findings(path=db.path)
    found.storage = await db.diagnose()
    found.checks.update(found.storage.checks)
    found.problems += found.storage.problems
    current = found.storage.readable and await _memory_checks(db, found)
    # The encoder belongs to this installation, not to the database: a missing one is said on its
    # own line (search goes on by words), never a problem of the database's.
    found.embedding_unavailable = await anyio.to_thread.run_sync(why_unavailable, embedding_model)
    if current:
        async with db.read(None) as conn:
            found.pages_embedded, found.pages_waiting_embedding = await progress(conn, MODEL_ID)
    await _hook_checks(db, found, readable=current)
    return found


async def _memory_checks(db: Database, found: Findings) -> bool:
    """The memory's own checks; False when its schema is not this memvm's (nothing more is read)."""
    async with db.read(None) as conn:
        tables = await catalogue(conn)
        version = await schema_version(conn, tables)
        if version is None:
            found.problems.append("the database holds no memvm schema yet; serve it once to create it")
            return False
        found.schema_version = version
        if found.schema_version != found.schema_expected:
            found.problems.append(
                f"schema version {found.schema_version}, this memvm expects {found.schema_expected}"
                + ("; serve it once to migrate" if found.schema_version < found.schema_expected else "")
            )
            return False
        found.namespaces = int(await _one(conn, _NAMESPACES))
        found.sessions = int(await _one(conn, _SESSIONS))
        found.pages = int(await _one(conn, _PAGES))
        found.tool_calls = int(await _one(conn, _TOOL_CALLS))
        found.expired_waiting = int(await _one(conn, _EXPIRED_WAITING))

        dangling = await conn.dangling_rows()
        found.checks["foreign_keys"] = "ok" if not dangling else f"{dangling} dangling"
        if dangling:
            found.problems.append(f"{dangling} rows point at rows that are gone (foreign_key_check)")

        drift = int(await _one(conn, COUNTS_DRIFT))
        found.checks["page_counts"] = "ok" if drift == 0 else f"{drift} namespaces off"
        if drift:
            found.problems.append(f"page counts disagree with the pages in {drift} namespaces")

        # The rules import holds every row to: a row written by other means may break them.
        broken = await violations(conn, tables.memory)
        found.checks["rows"] = (
            "ok" if not broken else f"{len(broken)}{'+' if len(broken) >= 20 else ''} break rules"
        )
        found.problems += [f"{violation}" for violation in broken[:5]]

    found.checks["search_index"] = await db.check_search_index()
    if not found.checks["search_index"].startswith("ok"):
        found.problems.append(f"the search index disagrees with the pages ({found.checks['search_index']})")
    return True


async def _one(conn: Reads, sql: Statement) -> Any:
    row = await conn.one(sql)
    return (row[0] if row else None) or 0


async def _hook_checks(db: Database, found: Findings, *, readable: bool) -> None:
    # What the hooks met is also in their journal beside the database, readable when it is not.
    if not readable:
        found.hook_sessions, found.hooks_guard_failed_open = await hook_sessions(None, db.target)
    else:
        async with db.read(None) as conn:
            found.hook_sessions, found.hooks_guard_failed_open = await hook_sessions(conn, db.target)
    for entry in found.hook_sessions:
        if stopped(entry):
            found.problems.append(
                f"hook capture for {entry.host} session {entry.session or '(unknown)'} stopped: the last "
                f"{entry.skipped_since_write} events were skipped ({entry.last_skip_reason})"
            )
