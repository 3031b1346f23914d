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
from memvm.engine.storage.statements import Statement, statement

_THIS_TURN = "namespace = :namespace AND session = :session AND turn = :turn"

_COUNT_KIND = statement(
    "call_log.count kind", f"SELECT count(*) AS n FROM guard_calls WHERE {_THIS_TURN} AND kind = :kind"
)

_COUNT_TOOL = statement(
    "call_log.count tool", f"SELECT count(*) AS n FROM guard_calls WHERE {_THIS_TURN} AND tool = :tool"
)

_SAME_CALL = statement(
    "call_log.same call", f"SELECT 1 FROM guard_calls WHERE {_THIS_TURN} AND call_hash = :call_hash LIMIT 1"
)

_RECENT_TOOLS = statement(
    "call_log.recent tools",
    f"SELECT tool FROM guard_calls WHERE {_THIS_TURN} ORDER BY rowid DESC LIMIT :limit",
)

# The call let through last this turn, and the verdict it got (noted in the same check, at the same
# moment); an outcome recorded since means it ran.
_LATEST_CALL = statement(
    "call_log.latest call",
    f"SELECT tool, call_hash, at FROM guard_calls WHERE {_THIS_TURN} ORDER BY rowid DESC LIMIT 1",
)
_LATEST_VERDICT = statement(
    "call_log.latest verdict",
    f"SELECT tool, verdict, reasons, at FROM guard_verdicts WHERE {_THIS_TURN} ORDER BY rowid DESC LIMIT 1",
)
_OUTCOME_SINCE = statement(
    "call_log.outcome since",
    "SELECT 1 FROM tool_calls WHERE namespace = :namespace AND session = :session AND at >= :since LIMIT 1",
)
# The turn's latest outcomes, newest first, far enough back to see a loop of workspace calls.
_LATEST_OUTCOMES = statement(
    "call_log.latest outcomes",
    f"""
SELECT tool, call_hash, outcome, ref, error_message FROM tool_calls
WHERE {_THIS_TURN} ORDER BY call_id DESC LIMIT 60
""",
)

_INSERT = statement(
    "call_log.insert",
    """
INSERT INTO guard_calls (namespace, session, turn, tool, kind, call_hash, at)
VALUES (:namespace, :session, :turn, :tool, :kind, :call_hash, :now)
RETURNING rowid
""",
)

_STRIKE = statement(
    "call_log.strike",
    """
INSERT INTO guard_strikes (namespace, session, turn, rule, count)
VALUES (:namespace, :session, :turn, :rule, 1)
ON CONFLICT (namespace, session, turn, rule) DO UPDATE SET count = guard_strikes.count + 1
RETURNING count
""",
)

_INSERT_VERDICT = statement(
    "call_log.insert verdict",
    """
INSERT INTO guard_verdicts (namespace, session, turn, tool, verdict, reasons, at)
VALUES (:namespace, :session, :turn, :tool, :verdict, :reasons, :now)
""",
)

# A session keeps its latest verdicts only: the record is for a person looking back, not a rule.
KEPT_VERDICTS = 500
_PRUNE_VERDICTS = statement(
    "call_log.prune verdicts",
    """
DELETE FROM guard_verdicts WHERE namespace = :namespace AND session = :session AND rowid <= (
    SELECT rowid FROM guard_verdicts WHERE namespace = :namespace AND session = :session
    ORDER BY rowid DESC LIMIT 1 OFFSET :kept
)
""",
)

_PRUNE_CALLS = statement(
    "call_log.prune calls",
    "DELETE FROM guard_calls WHERE namespace = :namespace AND session = :session AND turn < :previous_turn",
)
_PRUNE_STRIKES = statement(
    "call_log.prune strikes",
    "DELETE FROM guard_strikes WHERE namespace = :namespace AND session = :session AND turn < :previous_turn",
)


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
        return await self._count(_COUNT_KIND, kind=kind.value)

    async def count_tool(self, tool: str) -> int:
        return await self._count(_COUNT_TOOL, tool=tool)

    async def seen(self, call_hash: str) -> bool:
        row = await self.conn.one(_SAME_CALL, **self._this_turn, call_hash=call_hash)
        return row is not None

    async def recent_tools(self, limit: int) -> list[str]:
        rows = await self.conn.all(_RECENT_TOOLS, **self._this_turn, limit=limit)
        return [row["tool"] for row in rows]

    async def unrun_verdict(self, call_hash: str) -> tuple[CallVerdict, list[GuardReason]] | None:
        """The verdict this same call got when it was checked last, if nothing has happened since:
        it is still the latest call let through this turn, and no outcome has been recorded after
        it (a bound result counts as one too: the caller checks for it). Checking a call again is
        not running it again."""
        call = await self.conn.one(_LATEST_CALL, **self._this_turn)
        if call is None or call["call_hash"] != call_hash:
            return None
        since = await self.conn.one(
            _OUTCOME_SINCE, namespace=self.namespace, session=self.session, since=call["at"]
        )
        if since is not None:
            return None
        noted = await self.conn.one(_LATEST_VERDICT, **self._this_turn)
        if noted is None or (noted["tool"], noted["at"]) != (call["tool"], call["at"]):
            return None
        reasons = [_reason(reason) for reason in json.loads(noted["reasons"])]
        return CallVerdict(noted["verdict"]), reasons

    async def same_runs_since_an_edit(self, call_hash: str, editing_tools: frozenset[str]) -> int:
        """How many times this call ran this turn since the last edit, each with the same result as
        the others (an identical result is bound once, so it has one reference); 0 when a result
        differed or cannot be told."""
        seen: set[tuple[str, str | None, str | None]] = set()
        runs = 0
        for row in await self.conn.all(_LATEST_OUTCOMES, **self._this_turn):
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
            _INSERT, **self._this_turn, tool=tool, kind=kind.value, call_hash=call_hash, now=now
        )
        assert row is not None  # RETURNING yields the row it wrote
        scope = (self.namespace, self.session, self.turn)
        await keep_newest_if_due(self.conn, "guard_calls", scope, int(row["rowid"]))
        for prune in (_PRUNE_CALLS, _PRUNE_STRIKES):
            await self.conn.execute(
                prune, namespace=self.namespace, session=self.session, previous_turn=self.turn - 1
            )

    async def note_verdict(
        self, tool: str, verdict: CallVerdict, reasons: list[GuardReason], now: float
    ) -> None:
        """Keep the verdict and its reasons for whoever looks back (the browser view)."""
        said = json.dumps(
            [
                {
                    "rule": r.rule.value,
                    "severity": r.severity.value,
                    "message": self.redaction.text(r.message),
                }
                for r in reasons
            ]
        )
        await self.conn.execute(
            _INSERT_VERDICT, **self._this_turn, tool=tool, verdict=verdict.value, reasons=said, now=now
        )
        await self.conn.execute(
            _PRUNE_VERDICTS, namespace=self.namespace, session=self.session, kept=KEPT_VERDICTS
        )

    async def strike(self, rule: GuardRule) -> int:
        """Count one more violation of `rule` this turn; returns the count so far."""
        row = await self.conn.one(_STRIKE, **self._this_turn, rule=rule.value)
        assert row is not None  # RETURNING always yields the row it wrote
        return int(row["count"])

    @property
    def _this_turn(self) -> dict[str, str | int]:
        return {"namespace": self.namespace, "session": self.session, "turn": self.turn}

    async def _count(self, sql: Statement, **named: str) -> int:
        row = await self.conn.one(sql, **self._this_turn, **named)
        return int(row["n"]) if row else 0


def _reason(noted: dict[str, str]) -> GuardReason:
    return GuardReason(
        rule=GuardRule(noted["rule"]), severity=CallVerdict(noted["severity"]), message=noted["message"]
    )
