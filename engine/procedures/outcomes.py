"""`record_tool_outcome`: log a finished tool call and learn from it, in one write transaction.

A success right after a failure of the same tool, with different arguments, is taken as the fix
for that failure: the two calls are linked both ways and the argument delta becomes the typical
fix of the failure's error pattern. Statistics, error patterns and argument values that worked are
kept as running aggregates, so reading them later never scans the log.
"""

import json
from typing import Any

from memvm.engine.guards.bindings import bind, recent_results
from memvm.engine.guards.grounding import register_user_numbers
from memvm.engine.guards.guards import runaway_reason
from memvm.engine.guards.literals import call_hash, canonical_json
from memvm.engine.kept_logs import keep_newest, keep_newest_if_due
from memvm.engine.models.pages import NewPage, PageType, Role
from memvm.engine.models.procedures import ERROR_OUTCOMES, FixLink, Outcome, OutcomeResult, ToolOutcome
from memvm.engine.paging.memory import Writer, fresh_page_id
from memvm.engine.paging.pages import insert_page
from memvm.engine.paging.projects import EVERYWHERE
from memvm.engine.procedures.signatures import argument_delta, error_signature, flatten, telling_line
from memvm.engine.sessions import touch_with_allowance
from memvm.engine.storage.api import Writes

# A failure is fixed by a success among the session's next calls, not by one much later.
FIX_WINDOW = 10
# Results up to this size are bound as $vN; larger ones are data to read, not values to pass.
MAX_BOUND_CHARS = 8_000
MAX_ERROR_MESSAGE_CHARS = 500
# Argument values remembered per tool, goal and argument; and arguments looked at per call.
VALUES_PER_ARG = 10
ARGS_PER_CALL = 20
MAX_VALUE_CHARS = 120

_LAST_SESSION_CALLS = """
SELECT call_id, tool, call_hash, outcome, fixed_by, args, error_signature
FROM tool_calls WHERE namespace = ? AND session = ?
ORDER BY call_id DESC LIMIT ?
"""

# Call ids count within the namespace (1, 2, 3, ...): a tenant's ids say nothing of others' calls.
_INSERT_CALL = """
INSERT INTO tool_calls (
    namespace, call_id, session, turn, tool, args, call_hash, outcome, error_signature, error_message,
    duration_ms, goal, ref, at
) VALUES (?1, (SELECT coalesce(max(call_id), 0) + 1 FROM tool_calls WHERE namespace = ?1),
          ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
RETURNING call_id
"""

_SET_RESULT_PAGE = "UPDATE tool_calls SET result_page_id = ? WHERE namespace = ? AND call_id = ?"
_MARK_FIXED = "UPDATE tool_calls SET fixed_by = ?, delta = ? WHERE namespace = ? AND call_id = ?"
_MARK_FIX = "UPDATE tool_calls SET fixes = ?, delta = ? WHERE namespace = ? AND call_id = ?"

_UPSERT_STATS = """
INSERT INTO tool_stats (namespace, tool, calls, successes, duration_total, duration_count, last_at, last_call_id)
VALUES (?1, ?2, 1, ?3, COALESCE(CAST(?4 AS DOUBLE PRECISION), 0), CASE WHEN ?4 IS NULL THEN 0 ELSE 1 END, ?5, ?6)
ON CONFLICT (namespace, tool) DO UPDATE SET
    calls = tool_stats.calls + 1,
    successes = tool_stats.successes + ?3,
    duration_total = tool_stats.duration_total + COALESCE(CAST(?4 AS DOUBLE PRECISION), 0),
    duration_count = tool_stats.duration_count + CASE WHEN ?4 IS NULL THEN 0 ELSE 1 END,
    last_at = ?5,
    last_call_id = ?6
"""

_UPSERT_ERROR = """
INSERT INTO error_patterns (namespace, tool, signature, count, example, last_at, last_call_id)
VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6)
ON CONFLICT (namespace, tool, signature) DO UPDATE SET
    count = error_patterns.count + 1, example = COALESCE(?4, error_patterns.example), last_at = ?5,
    last_call_id = ?6
"""

_TEACH_FIX = """
UPDATE error_patterns SET typical_fix = ?, fix_call_id = ?, fix_count = fix_count + 1
WHERE namespace = ? AND tool = ? AND signature = ?
"""

_UPSERT_VALUE = """
INSERT INTO success_values (namespace, tool, goal, arg, value, count, last_at, last_call_id)
VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7)
ON CONFLICT (namespace, tool, goal, arg, value) DO UPDATE SET
    count = success_values.count + 1, last_at = ?6, last_call_id = ?7
"""

# Keep the most used values of one argument; the rest make room.
_PRUNE_VALUES = """
DELETE FROM success_values
WHERE namespace = ?1 AND tool = ?2 AND goal = ?3 AND arg = ?4 AND value NOT IN (
    SELECT value FROM success_values
    WHERE namespace = ?1 AND tool = ?2 AND goal = ?3 AND arg = ?4
    ORDER BY count DESC, last_at DESC LIMIT ?5
)
"""


def goal_key(goal: str | None) -> str:
    """Goals group by their words, whatever the case and spacing; '' is no goal."""
    return " ".join(goal.lower().split())[:100] if goal else ""


async def record_tool_outcome(
    writer: Writer,
    *,
    namespace: str,
    session: str,
    call: ToolOutcome,
    host_session: str | None = None,
    project: str | None = None,
) -> OutcomeResult:
    """Log `call` in `session`, link it to the failure it fixes, and say if the tool has run away.

    The call and its result page stay in `session`. When `session` is ad hoc, the result is also
    bound in `host_session`, the caller's own, and the runaway check reads that session's results:
    the guards judge an ad-hoc session's calls there, so a new name per call hides nothing. The
    result page belongs to `project` (see paging/projects.py); what the tool taught is the
    namespace's, whatever the project.
    """
    call = writer.redaction.outcome(call)
    page = _result_page(call)
    levels = (await writer.levels_off_loop([page]))[0] if page else None
    if levels is not None and levels.tokens.full < writer.config.result_page_tokens:
        page = levels = None  # short enough to read in the reply: no page
    signature = (
        error_signature(call.error_type, call.error_message, call.outcome.value)
        if call.outcome in ERROR_OUTCOMES
        else None
    )
    digest = call_hash(call.tool, call.args)
    now = writer.clock.now()
    async with writer.db.write(namespace) as conn:
        state, guarded = await touch_with_allowance(
            conn, namespace, session, host_session, now, writer.config.turn_idle_seconds
        )
        window = await conn.all(_LAST_SESSION_CALLS, (namespace, session, FIX_WINDOW))
        ref = None
        if _bindable(call):
            # Bound in the named session, and also in the caller's own when the name was made up.
            bound = [
                await bind(
                    conn,
                    namespace=namespace,
                    session=each.session,
                    turn=each.turn,
                    now=now,
                    tool=call.tool,
                    args=call.args,
                    value=call.result,
                    name=None,
                )
                for each in ([state] if guarded is state else [state, guarded])
            ]
            ref = bound[0].ref
        row = await conn.one(
            _INSERT_CALL,
            (
                namespace,
                session,
                state.turn,
                call.tool,
                canonical_json(call.args),
                digest,
                call.outcome.value,
                signature,
                (call.error_message or "")[:MAX_ERROR_MESSAGE_CHARS] or None,
                call.duration_ms,
                call.goal,
                ref,
                now,
            ),
        )
        assert row is not None  # RETURNING yields the row it wrote
        call_id = int(row["call_id"])

        page_id = None
        if page is not None and levels is not None:
            page_id = await fresh_page_id(conn, namespace, PageType.TOOL_RESULT)
            stored = page.model_copy(update={"provenance": f"tool:{call.tool} call {call_id}"})
            await insert_page(
                conn,
                namespace=namespace,
                session=session,
                page_id=page_id,
                page=stored,
                levels=levels,
                turn=state.turn,
                now=now,
                project=project or EVERYWHERE,
            )
            await conn.execute(_SET_RESULT_PAGE, (page_id, namespace, call_id))
            if ref is None and call.outcome is Outcome.SUCCESS:
                # Too large to bind (a long file read): its numbers are still ones the agent has
                # read, and ground the calls that use them as a user's would; forgetting the page
                # takes them back (see paging/derived.py).
                await register_user_numbers(conn, namespace, session, page.content)

        fix = None
        if call.outcome is Outcome.SUCCESS:
            fix = await _link_fix(conn, namespace, call, digest, call_id, window)
        await _learn(conn, namespace, call, signature, call_id, now)
        if await keep_newest_if_due(conn, "tool_calls", (namespace,), call_id):
            for learned in ("tool_stats", "error_patterns", "success_values"):
                await keep_newest(conn, learned, (namespace,))
        runaway = None
        if ref is not None and writer.config.guards.runaway_repeats:
            recent = await recent_results(
                conn, namespace, guarded.session, call.tool, writer.config.guards.runaway_repeats
            )
            runaway = runaway_reason(recent, writer.config.guards.runaway_repeats)
    return OutcomeResult(call_id=call_id, fix=fix, ref=ref, page_id=page_id, runaway=runaway)


async def _link_fix(
    conn: Writes,
    namespace: str,
    call: ToolOutcome,
    digest: str,
    call_id: int,
    window: list[Any],
) -> FixLink | None:
    """Link the newest unfixed failure of this tool in the window whose arguments differ."""
    for earlier in window:
        if (
            earlier["tool"] == call.tool
            and earlier["outcome"] in ERROR_OUTCOMES
            and earlier["fixed_by"] is None
            and earlier["call_hash"] != digest
        ):
            delta = argument_delta(json.loads(earlier["args"]), call.args)
            stored = canonical_json(delta)
            await conn.execute(_MARK_FIXED, (call_id, stored, namespace, earlier["call_id"]))
            await conn.execute(_MARK_FIX, (earlier["call_id"], stored, namespace, call_id))
            await conn.execute(
                _TEACH_FIX, (stored, call_id, namespace, call.tool, earlier["error_signature"])
            )
            return FixLink(fixed_call_id=earlier["call_id"], delta=delta)
    return None


async def _learn(
    conn: Writes,
    namespace: str,
    call: ToolOutcome,
    signature: str | None,
    call_id: int,
    now: float,
) -> None:
    succeeded = call.outcome is Outcome.SUCCESS
    await conn.execute(_UPSERT_STATS, (namespace, call.tool, int(succeeded), call.duration_ms, now, call_id))
    if signature is not None:
        example = (
            telling_line(call.error_message)[:200]
            if call.error_message and call.error_message.strip()
            else None
        )
        await conn.execute(_UPSERT_ERROR, (namespace, call.tool, signature, example, now, call_id))
    if not succeeded:
        return
    values = [
        (arg, text)
        for arg, value in list(flatten(call.args).items())[:ARGS_PER_CALL]
        if arg and len(text := canonical_json(value)) <= MAX_VALUE_CHARS
    ]
    for goal in {"", goal_key(call.goal)}:
        for arg, text in values:
            await conn.execute(_UPSERT_VALUE, (namespace, call.tool, goal, arg, text, now, call_id))
            await conn.execute(_PRUNE_VALUES, (namespace, call.tool, goal, arg, VALUES_PER_ARG))


def _bindable(call: ToolOutcome) -> bool:
    if call.outcome is not Outcome.SUCCESS or call.result is None:
        return False
    return len(canonical_json(call.result)) <= MAX_BOUND_CHARS


def _result_page(call: ToolOutcome) -> NewPage | None:
    """The page a result would become; whether it is long enough to keep is decided by its levels."""
    if call.result is None:
        return None
    text = (
        call.result if isinstance(call.result, str) else json.dumps(call.result, ensure_ascii=False, indent=1)
    )
    return NewPage(
        content=text,
        type=PageType.TOOL_RESULT,
        role=Role.TOOL,
        provenance=f"tool:{call.tool}",
        metadata={"tool": call.tool, "outcome": call.outcome.value},
    )
