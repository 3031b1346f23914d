"""What the namespace has learned about its tools, across all sessions: the read side of hints.

Every figure comes from the running aggregates `record_tool_outcome` keeps, or from the call log
through an index, newest first and bounded, so the cost does not grow with the number of calls.
"""

import json
from collections.abc import Sequence

from memvm.engine.models.procedures import (
    ErrorHint,
    FixGuidance,
    Outcome,
    ProceduralKnowledge,
    RecentCall,
    SuccessHint,
    ToolHints,
)
from memvm.engine.procedures.outcomes import goal_key
from memvm.engine.procedures.signatures import describe_delta, error_signature
from memvm.engine.storage.api import Reads, Row
from memvm.engine.storage.statements import statement, template

MAX_TOOLS = 5
ERRORS_PER_TOOL = 3
HINTS_PER_TOOL = 6
RECENT_PER_TOOL = 3
GUIDANCE_ITEMS = 3

_STATS_FOR = template(
    "procedures.stats for",
    """
SELECT tool, calls, successes, duration_total, duration_count, last_at
FROM tool_stats WHERE namespace = :namespace AND tool IN ({marks})
""",
    marks=":in0",
)

_RECENT_TOOLS = statement(
    "procedures.recent tools",
    """
SELECT tool FROM tool_stats WHERE namespace = :namespace ORDER BY last_at DESC, last_call_id DESC LIMIT :limit
""",
)

_TOOLS_FOR_GOAL = statement(
    "procedures.tools for goal",
    "SELECT DISTINCT tool FROM success_values WHERE namespace = :namespace AND goal = :goal LIMIT :limit",
)

# An error type is looked up under both of its signatures (see _signatures).
_TOOLS_FOR_ERROR = statement(
    "procedures.tools for error",
    """
SELECT tool FROM error_patterns WHERE namespace = :namespace AND signature IN (:as_type, :as_message)
ORDER BY count DESC LIMIT :limit
""",
)

_ERRORS = statement(
    "procedures.errors",
    """
SELECT signature, count, example, last_at, last_call_id, typical_fix, fix_call_id, fix_count
FROM error_patterns WHERE namespace = :namespace AND tool = :tool
ORDER BY count DESC LIMIT :limit
""",
)

_VALUES = statement(
    "procedures.values",
    """
SELECT arg, value, count, last_call_id FROM success_values
WHERE namespace = :namespace AND tool = :tool AND goal = :goal
ORDER BY count DESC, last_at DESC LIMIT :limit
""",
)

_RECENT_CALLS = statement(
    "procedures.recent calls",
    """
SELECT call_id, outcome, session, at, error_signature, fixed_by FROM tool_calls
WHERE namespace = :namespace AND tool = :tool ORDER BY call_id DESC LIMIT :limit
""",
)

_FIXED_FAILURES = statement(
    "procedures.fixed failures",
    """
SELECT call_id, tool, session, at, error_signature, fixed_by, delta FROM tool_calls
WHERE namespace = :namespace AND error_signature IN (:as_type, :as_message) AND fixed_by IS NOT NULL
ORDER BY call_id DESC LIMIT :limit
""",
)


async def procedural_knowledge(
    conn: Reads,
    *,
    namespace: str,
    tools: Sequence[str] | None,
    goal: str | None,
    error_type: str | None,
) -> ProceduralKnowledge:
    """Patterns for the named tools (else those tied to the goal or error, else the latest used)."""
    signatures = _signatures(error_type) if error_type else None
    goal_words = goal_key(goal)
    chosen = list(dict.fromkeys(tools or []))[:MAX_TOOLS] or await _pick_tools(
        conn, namespace, goal_words, signatures
    )
    stats = {row["tool"]: row for row in await conn.all_in(_STATS_FOR, chosen, namespace=namespace)}
    hints = [await _tool_hints(conn, namespace, stats[tool], goal_words) for tool in chosen if tool in stats]
    guidance = await _guidance(conn, namespace, signatures, chosen if tools else None) if signatures else []
    return ProceduralKnowledge(tools=hints, guidance=guidance)


def _signatures(error_type: str) -> dict[str, str]:
    # An explicit type was stored as given; a message was stored normalised. Try both.
    return {
        "as_type": error_signature(error_type, None, error_type),
        "as_message": error_signature(None, error_type, error_type),
    }


async def _pick_tools(conn: Reads, namespace: str, goal: str, signatures: dict[str, str] | None) -> list[str]:
    if signatures:
        rows = await conn.all(_TOOLS_FOR_ERROR, namespace=namespace, **signatures, limit=MAX_TOOLS)
    elif goal:
        rows = await conn.all(_TOOLS_FOR_GOAL, namespace=namespace, goal=goal, limit=MAX_TOOLS)
    else:
        rows = await conn.all(_RECENT_TOOLS, namespace=namespace, limit=MAX_TOOLS)
    return list(dict.fromkeys(row["tool"] for row in rows))


async def _tool_hints(conn: Reads, namespace: str, stats: Row, goal: str) -> ToolHints:
    tool = stats["tool"]
    errors = await conn.all(_ERRORS, namespace=namespace, tool=tool, limit=ERRORS_PER_TOOL)
    values = await conn.all(_VALUES, namespace=namespace, tool=tool, goal=goal, limit=HINTS_PER_TOOL)
    recent = await conn.all(_RECENT_CALLS, namespace=namespace, tool=tool, limit=RECENT_PER_TOOL)
    return ToolHints(
        tool=tool,
        calls=stats["calls"],
        success_rate=round(stats["successes"] / stats["calls"], 3) if stats["calls"] else 0.0,
        mean_duration_ms=round(stats["duration_total"] / stats["duration_count"], 1)
        if stats["duration_count"]
        else None,
        last_at=stats["last_at"],
        common_errors=[_error_hint(row) for row in errors],
        success_hints=[
            SuccessHint(
                arg=row["arg"],
                value=json.loads(row["value"]),
                count=row["count"],
                goal=goal or None,
                last_call_id=row["last_call_id"],
            )
            for row in values
        ],
        recent=[
            RecentCall(
                call_id=row["call_id"],
                outcome=Outcome(row["outcome"]),
                session=row["session"],
                at=row["at"],
                error_type=row["error_signature"],
                fixed_by=row["fixed_by"],
            )
            for row in recent
        ],
    )


def _error_hint(row: Row) -> ErrorHint:
    fix = json.loads(row["typical_fix"]) if row["typical_fix"] else None
    return ErrorHint(
        error_type=row["signature"],
        count=row["count"],
        example=row["example"],
        last_call_id=row["last_call_id"],
        last_at=row["last_at"],
        typical_fix=fix,
        typical_fix_text=describe_delta(fix) if fix else None,
        fix_call_id=row["fix_call_id"],
        fix_count=row["fix_count"],
    )


async def _guidance(
    conn: Reads, namespace: str, signatures: dict[str, str], tools: list[str] | None
) -> list[FixGuidance]:
    # Read a few more than shown, since some may belong to tools the caller did not ask about.
    rows = await conn.all(_FIXED_FAILURES, namespace=namespace, **signatures, limit=GUIDANCE_ITEMS * 4)
    guidance = []
    for row in rows:
        if tools is not None and row["tool"] not in tools:
            continue
        delta = json.loads(row["delta"]) if row["delta"] else {}
        guidance.append(
            FixGuidance(
                tool=row["tool"],
                error_type=row["error_signature"],
                failed_call_id=row["call_id"],
                fixed_call_id=row["fixed_by"],
                session=row["session"],
                at=row["at"],
                delta=delta,
                description=describe_delta(delta),
            )
        )
    return guidance[:GUIDANCE_ITEMS]
