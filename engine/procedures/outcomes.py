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
from memvm.engine.storage.statements import statement

# A failure is fixed by a success among the session's next calls, not by one much later.
FIX_WINDOW = 10
# Results up to this size are bound as $vN; larger ones are data to read, not values to pass.
MAX_BOUND_CHARS = 8_000
MAX_ERROR_MESSAGE_CHARS = 500
# Argument values remembered per tool, goal and argument; and arguments looked at per call.
VALUES_PER_ARG = 10
ARGS_PER_CALL = 20
MAX_VALUE_CHARS = 120

_LAST_SESSION_CALLS = statement(
    "outcomes.last session calls",
    """
SELECT call_id, tool, call_hash, outcome, fixed_by, args, error_signature
FROM tool_calls WHERE namespace = :namespace AND session = :session
ORDER BY call_id DESC LIMIT :limit
""",
)

# Call ids count within the namespace (1, 2, 3, ...): a tenant's ids say nothing of others' calls.
_INSERT_CALL = statement(
    "outcomes.insert call",
    """
INSERT INTO tool_calls (
    namespace, call_id, session, turn, tool, args, call_hash, outcome, error_signature, error_message,
    duration_ms, goal, ref, at
) VALUES (:namespace, (SELECT coalesce(max(call_id), 0) + 1 FROM tool_calls WHERE namespace = :namespace),
          :session, :turn, :tool, :args, :call_hash, :outcome, :error_signature, :error_message,
          :duration_ms, :goal, :ref, :now)
RETURNING call_id
""",
)

_ONE_CALL = "namespace = :namespace AND call_id = :call_id"
_SET_RESULT_PAGE = statement(
    "outcomes.set result page", f"UPDATE tool_calls SET result_page_id = :page_id WHERE {_ONE_CALL}"
)
_MARK_FIXED = statement(
    "outcomes.mark fixed",
    f"UPDATE tool_calls SET fixed_by = :fixed_by, delta = :delta WHERE {_ONE_CALL}",
)
_MARK_FIX = statement(
    "outcomes.mark fix",
    f"UPDATE tool_calls SET fixes = :fixes, delta = :delta WHERE {_ONE_CALL}",
)

_UPSERT_STATS = statement(
    "outcomes.upsert stats",
    """
INSERT INTO tool_stats (namespace, tool, calls, successes, duration_total, duration_count, last_at, last_call_id)
VALUES (:namespace, :tool, 1, :succeeded, COALESCE(CAST(:duration_ms AS DOUBLE PRECISION), 0),
        CASE WHEN :duration_ms IS NULL THEN 0 ELSE 1 END, :now, :call_id)
ON CONFLICT (namespace, tool) DO UPDATE SET
    calls = tool_stats.calls + 1,
    successes = tool_stats.successes + :succeeded,
    duration_total = tool_stats.duration_total + COALESCE(CAST(:duration_ms AS DOUBLE PRECISION), 0),
    duration_count = tool_stats.duration_count + CASE WHEN :duration_ms IS NULL THEN 0 ELSE 1 END,
    last_at = :now,
    last_call_id = :call_id
""",
)

_UPSERT_ERROR = statement(
    "outcomes.upsert error",
    """
INSERT INTO error_patterns (namespace, tool, signature, count, example, last_at, last_call_id)
VALUES (:namespace, :tool, :signature, 1, :example, :now, :call_id)
ON CONFLICT (namespace, tool, signature) DO UPDATE SET
    count = error_patterns.count + 1, example = COALESCE(:example, error_patterns.example), last_at = :now,
    last_call_id = :call_id
""",
)

_TEACH_FIX = statement(
    "outcomes.teach fix",
    """
UPDATE error_patterns SET typical_fix = :fix, fix_call_id = :fix_call_id, fix_count = fix_count + 1
WHERE namespace = :namespace AND tool = :tool AND signature = :signature
""",
)

_UPSERT_VALUE = statement(
    "outcomes.upsert value",
    """
INSERT INTO success_values (namespace, tool, goal, arg, value, count, last_at, last_call_id)
VALUES (:namespace, :tool, :goal, :arg, :value, 1, :now, :call_id)
ON CONFLICT (namespace, tool, goal, arg, value) DO UPDATE SET
    count = success_values.count + 1, last_at = :now, last_call_id = :call_id
""",
)

# Keep the most used values of one argument; the rest make room.
_PRUNE_VALUES = statement(
    "outcomes.prune values",
    """
DELETE FROM success_values
WHERE namespace = :namespace AND tool = :tool AND goal = :goal AND arg = :arg AND value NOT IN (
    SELECT value FROM success_values
    WHERE namespace = :namespace AND tool = :tool AND goal = :goal AND arg = :arg
    ORDER BY count DESC, last_at DESC LIMIT :kept
)
""",
)


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
    async with writer.db.write(namespace) as conn:
        now = conn.now
        state, guarded = await touch_with_allowance(
            conn, namespace, session, host_session, now, writer.config.turn_idle_seconds
        )
        window = await conn.all(_LAST_SESSION_CALLS, namespace=namespace, session=session, limit=FIX_WINDOW)
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
            namespace=namespace,
            session=session,
            turn=state.turn,
            tool=call.tool,
            args=canonical_json(call.args),
            call_hash=digest,
            outcome=call.outcome.value,
            error_signature=signature,
            error_message=(call.error_message or "")[:MAX_ERROR_MESSAGE_CHARS] or None,
            duration_ms=call.duration_ms,
            goal=call.goal,
            ref=ref,
            now=now,
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
            await conn.execute(_SET_RESULT_PAGE, namespace=namespace, call_id=call_id, page_id=page_id)
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
            await conn.execute(
                _MARK_FIXED, namespace=namespace, call_id=earlier["call_id"], fixed_by=call_id, delta=stored
            )
            await conn.execute(
                _MARK_FIX, namespace=namespace, call_id=call_id, fixes=earlier["call_id"], delta=stored
            )
            await conn.execute(
                _TEACH_FIX,
                namespace=namespace,
                tool=call.tool,
                signature=earlier["error_signature"],
                fix=stored,
                fix_call_id=call_id,
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
    await conn.execute(
        _UPSERT_STATS,
        namespace=namespace,
        tool=call.tool,
        succeeded=int(succeeded),
        duration_ms=call.duration_ms,
        now=now,
        call_id=call_id,
    )
    if signature is not None:
        example = (
            telling_line(call.error_message)[:200]
            if call.error_message and call.error_message.strip()
            else None
        )
        await conn.execute(
            _UPSERT_ERROR,
            namespace=namespace,
            tool=call.tool,
            signature=signature,
            example=example,
            now=now,
            call_id=call_id,
        )
    if not succeeded:
        return
    values = [
        (arg, text)
        for arg, value in list(flatten(call.args).items())[:ARGS_PER_CALL]
        if arg and len(text := canonical_json(value)) <= MAX_VALUE_CHARS
    ]
    for goal in {"", goal_key(call.goal)}:
        for arg, text in values:
            one_arg = {"namespace": namespace, "tool": call.tool, "goal": goal, "arg": arg}
            await conn.execute(_UPSERT_VALUE, **one_arg, value=text, now=now, call_id=call_id)
            await conn.execute(_PRUNE_VALUES, **one_arg, kept=VALUES_PER_ARG)


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
