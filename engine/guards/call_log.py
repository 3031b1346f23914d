"""The calls the guards let through this turn, the warnings each rule has given, and the latest
verdicts with their reasons.

Only the current and the previous turn are kept: every rule counts within a turn, so older rows
would only grow the file. The counts live in SQLite, so a restart resets nothing.
"""

import json
from dataclasses import dataclass

from memvm.engine.guard_config import ToolKind
from memvm.engine.kept_logs import keep_newest_if_due
from memvm.engine.models.guards import CallVerdict, GuardReason, GuardRule
from memvm.engine.redacted_writes import Redaction
from memvm.engine.storage.api import Writes

_COUNT_KIND = """
SELECT count(*) AS n FROM guard_calls WHERE namespace = ? AND session = ? AND turn = ? AND kind = ?
"""

_COUNT_TOOL = """
SELECT count(*) AS n FROM guard_calls WHERE namespace = ? AND session = ? AND turn = ? AND tool = ?
"""

_SAME_CALL = """
SELECT 1 FROM guard_calls WHERE namespace = ? AND session = ? AND turn = ? AND call_hash = ? LIMIT 1
"""

_RECENT_TOOLS = """
SELECT tool FROM guard_calls WHERE namespace = ? AND session = ? AND turn = ? ORDER BY rowid DESC LIMIT ?
"""

# The call let through last this turn, and the verdict it got (noted in the same check, at the same
# moment); an outcome recorded since means it ran.
_LATEST_CALL = """
SELECT tool, call_hash, at FROM guard_calls WHERE namespace = ? AND session = ? AND turn = ?
ORDER BY rowid DESC LIMIT 1
"""
_LATEST_VERDICT = """
SELECT tool, verdict, reasons, at FROM guard_verdicts WHERE namespace = ? AND session = ? AND turn = ?
ORDER BY rowid DESC LIMIT 1
"""
_OUTCOME_SINCE = "SELECT 1 FROM tool_calls WHERE namespace = ? AND session = ? AND at >= ? LIMIT 1"
# The turn's latest outcomes, newest first, far enough back to see a loop of workspace calls.
_LATEST_OUTCOMES = """
SELECT tool, call_hash, outcome, ref, error_message FROM tool_calls
WHERE namespace = ? AND session = ? AND turn = ? ORDER BY call_id DESC LIMIT 60
"""

_INSERT = """
INSERT INTO guard_calls (namespace, session, turn, tool, kind, call_hash, at) VALUES (?, ?, ?, ?, ?, ?, ?)
RETURNING rowid
"""

_STRIKE = """
INSERT INTO guard_strikes (namespace, session, turn, rule, count) VALUES (?, ?, ?, ?, 1)
ON CONFLICT (namespace, session, turn, rule) DO UPDATE SET count = guard_strikes.count + 1
RETURNING count
"""

_INSERT_VERDICT = """
INSERT INTO guard_verdicts (namespace, session, turn, tool, verdict, reasons, at) VALUES (?, ?, ?, ?, ?, ?, ?)
"""

# A session keeps its latest verdicts only: the record is for a person looking back, not a rule.
KEPT_VERDICTS = 500
_PRUNE_VERDICTS = """
DELETE FROM guard_verdicts WHERE namespace = ?1 AND session = ?2 AND rowid <= (
    SELECT rowid FROM guard_verdicts WHERE namespace = ?1 AND session = ?2 ORDER BY rowid DESC LIMIT 1 OFFSET ?3
)
"""

_PRUNE_CALLS = "DELETE FROM guard_calls WHERE namespace = ? AND session = ? AND turn < ?"
_PRUNE_STRIKES = "DELETE FROM guard_strikes WHERE namespace = ? AND session = ? AND turn < ?"


@dataclass(frozen=True)
class CallLog:
    """One session's turn, seen from inside a write transaction."""

    conn: Writes
    namespace: str
    session: str
    turn: int
    # The reasons quote the call (its tool, argument paths and values): stored redacted, as
    # everything memvm stores, unless redaction is off.
    redaction: Redaction

    async def count_kind(self, kind: ToolKind) -> int:
        return await self._count(_COUNT_KIND, kind.value)

    async def count_tool(self, tool: str) -> int:
        return await self._count(_COUNT_TOOL, tool)

    async def seen(self, call_hash: str) -> bool:
        row = await self.conn.one(_SAME_CALL, (self.namespace, self.session, self.turn, call_hash))
        return row is not None

    async def recent_tools(self, limit: int) -> list[str]:
        rows = await self.conn.all(_RECENT_TOOLS, (self.namespace, self.session, self.turn, limit))
        return [row["tool"] for row in rows]

    async def unrun_verdict(self, call_hash: str) -> tuple[CallVerdict, list[GuardReason]] | None:
        """The verdict this same call got when it was checked last, if nothing has happened since:
        it is still the latest call let through this turn, and no outcome has been recorded after
        it (a bound result counts as one too: the caller checks for it). Checking a call again is
        not running it again."""
        args = (self.namespace, self.session, self.turn)
        call = await self.conn.one(_LATEST_CALL, args)
        if call is None or call["call_hash"] != call_hash:
            return None
        if await self.conn.one(_OUTCOME_SINCE, (self.namespace, self.session, call["at"])) is not None:
            return None
        noted = await self.conn.one(_LATEST_VERDICT, args)
        if noted is None or (noted["tool"], noted["at"]) != (call["tool"], call["at"]):
            return None
        reasons = [GuardReason.model_validate(reason) for reason in json.loads(noted["reasons"])]
        return CallVerdict(noted["verdict"]), reasons

    async def same_runs_since_an_edit(self, call_hash: str, editing_tools: frozenset[str]) -> int:
        """How many times this call ran this turn since the last edit, each with the same result as
        the others (an identical result is bound once, so it has one reference); 0 when a result
        differed or cannot be told."""
        seen: set[tuple[str, str | None, str | None]] = set()
        runs = 0
        for row in await self.conn.all(_LATEST_OUTCOMES, (self.namespace, self.session, self.turn)):
            if row["tool"] in editing_tools:
                break
            if row["call_hash"] != call_hash:
                continue
            if row["outcome"] == "success" and row["ref"] is None:
                return 0  # a result too large to bind: memvm cannot tell it was the same
            seen.add((row["outcome"], row["ref"], row["error_message"]))
            if len(seen) > 1:
                return 0
            runs += 1
        return runs

    async def record(self, tool: str, kind: ToolKind, call_hash: str, now: float) -> None:
        row = await self.conn.one(
            _INSERT, (self.namespace, self.session, self.turn, tool, kind.value, call_hash, now)
        )
        assert row is not None  # RETURNING yields the row it wrote
        scope = (self.namespace, self.session, self.turn)
        await keep_newest_if_due(self.conn, "guard_calls", scope, int(row["rowid"]))
        for prune in (_PRUNE_CALLS, _PRUNE_STRIKES):
            await self.conn.execute(prune, (self.namespace, self.session, self.turn - 1))

    async def note_verdict(
        self, tool: str, verdict: CallVerdict, reasons: list[GuardReason], now: float
    ) -> None:
        """Keep the verdict and its reasons for whoever looks back (the browser view)."""
        reasons = [self.redaction.fields(reason, "message") for reason in reasons]
        said = json.dumps([reason.model_dump(mode="json") for reason in reasons])
        await self.conn.execute(
            _INSERT_VERDICT, (self.namespace, self.session, self.turn, tool, verdict.value, said, now)
        )
        await self.conn.execute(_PRUNE_VERDICTS, (self.namespace, self.session, KEPT_VERDICTS))

    async def strike(self, rule: GuardRule) -> int:
        """Count one more violation of `rule` this turn; returns the count so far."""
        row = await self.conn.one(_STRIKE, (self.namespace, self.session, self.turn, rule.value))
        assert row is not None  # RETURNING always yields the row it wrote
        return int(row["count"])

    async def _count(self, sql: str, value: str) -> int:
        row = await self.conn.one(sql, (self.namespace, self.session, self.turn, value))
        return int(row["n"]) if row else 0
