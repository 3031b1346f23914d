"""`check_tool_call`: every guard on one proposed tool call, in one answer.

The host asks before it runs a call. Rules that catch a mistake the model can correct (a number
from nowhere, a spent budget, a cap, a loop, a runaway result) warn first and block once they
have warned `grace` times this turn. A reference to nothing always blocks: the call cannot run.
An identical call whose result was bound this turn is answered from that result instead of
running again. Calls that are not blocked are counted, so the next check sees them.
"""

import math
from typing import Any

from memvm.engine.guard_config import GuardConfig, ToolKind
from memvm.engine.guards.bindings import cached_result, recent_results
from memvm.engine.guards.call_log import CallLog
from memvm.engine.guards.grounding import check_ungrounded, grounding_message
from memvm.engine.guards.literals import as_number, call_hash, short
from memvm.engine.models.guards import (
    CallBudget,
    CallVerdict,
    GroundingResult,
    GuardReason,
    GuardRule,
    ToolCallCheck,
)

# Beyond this a float result is an overflow on its way to infinity, not a measurement.
_ABSURD_MAGNITUDE = 1e300
_DEGENERATE_WORDS = {"nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}


def runaway_reason(newest_first: list[Any], repeats: int) -> str | None:
    """Why a tool's recent results show it has run away, or None while they look healthy."""
    if not newest_first:
        return None
    latest = newest_first[0]
    if _degenerate(latest):
        return f"returned a degenerate value ({short(latest)})"
    if repeats <= 1 or len(newest_first) < repeats:
        return None
    numbers = [as_number(value) for value in newest_first[:repeats]]
    if any(number is None for number in numbers) or len(set(numbers)) != 1:
        return None
    return f"returned {short(latest)} the last {repeats} times"


async def check_tool_call(
    log: CallLog, *, tool: str, args: Any, config: GuardConfig, now: float, will_run: bool = False
) -> ToolCallCheck:
    """The verdict on calling `tool` with `args` now, with every reason; counts the call if it may run.

    A check asked again for the call just let through, with no outcome recorded since, gets the same
    verdict and counts nothing more: the call has not run twice. A host's pre-tool hook
    (`will_run`) is different: the call runs once it is allowed, so a second event is a second call."""
    grounding = await check_ungrounded(
        log.conn,
        namespace=log.namespace,
        session=log.session,
        args=args,
        structural_constants=config.structural_constants,
        memvm_tools=config.memvm_tools,
    )
    # The call that would really run is the one with references replaced.
    actual_args = args if grounding.missing_refs else grounding.resolved_args
    digest = call_hash(tool, actual_args)
    kind = config.kind_of(tool)
    used = await log.count_kind(kind)
    limit = config.budget_for(kind)
    # This very call's result, if it ran this turn: read once, for the two uses below.
    ran = await cached_result(log.conn, log.namespace, log.session, digest, log.turn)
    if not will_run and ran is None and (unrun := await log.unrun_verdict(digest)) is not None:
        verdict, reasons = unrun
        return ToolCallCheck(
            verdict=verdict,
            reasons=reasons,
            cached_result=None,  # a call with a cached result is blocked, never let through
            cached_ref=None,
            resolved_args=grounding.resolved_args,
            budget=CallBudget(kind=kind.value, used=used, limit=limit),
            turn=log.turn,
        )
    # A host's own tool on the workspace: its numbers are the agent's (a line, a timeout) and an
    # identical call may well see changed files; only caps apply.
    workspace = kind is ToolKind.WORKSPACE

    reasons = _grounding_reasons(grounding)
    struck: list[tuple[GuardRule, str]] = []
    invented = [] if workspace else [item for item in grounding.ungrounded if not item.suggestion]
    if invented:
        on_record = grounding.user_messages_on_record
        message = grounding_message(invented, [], user_on_record=on_record, memvm_tools=config.memvm_tools)
        consequential = config.consequential(tool)
        if on_record and consequential is None:
            struck.append((GuardRule.UNGROUNDED, message))
        else:
            # A call the operator marked as consequential is not made with a number from nowhere.
            # Any other is warned only: without the user's messages memvm cannot tell their numbers
            # from invented ones, and for ordinary work a number it cannot place is worth a word.
            severity = CallVerdict.BLOCK if on_record and consequential else CallVerdict.WARN
            reasons.append(GuardReason(rule=GuardRule.UNGROUNDED, severity=severity, message=message))
    if limit and used >= limit:
        struck.append(
            (
                GuardRule.BUDGET,
                f"This turn's budget of {limit} {kind.value} calls is spent; answer with what you have, "
                "or ask the user before doing more.",
            )
        )
    cap = config.cap_for(tool)
    if cap and await log.count_tool(tool) >= cap:
        struck.append(
            (GuardRule.TOOL_CAP, f"{tool} may run {cap} times per turn and already has; use its results.")
        )

    if workspace and config.workspace_repeats and tool not in config.editing_tools:
        runs = await log.same_runs_since_an_edit(digest, config.editing_tools)
        if runs >= config.workspace_repeats:
            reasons.append(
                GuardReason(
                    rule=GuardRule.REPEAT,
                    severity=CallVerdict.BLOCK,
                    message=f"{tool} ran {runs} times this turn with these arguments and gave the same "
                    "result each time, with nothing edited in between: running it again will not change "
                    "it. Change something first, or stop and report what it shows.",
                )
            )

    cached = None
    if tool not in config.polling_tools and not workspace:
        cached = ran
        if cached is not None:
            # A model without memvm's tools gets the result after the reasons (see GuardConfig).
            where = f"in cached_result ({cached.ref})" if config.memvm_tools else "given below"
            reasons.append(
                GuardReason(
                    rule=GuardRule.REPEAT,
                    severity=CallVerdict.BLOCK,
                    message=f"{tool} already ran with these arguments this turn; its result is {where}. "
                    "Use it instead of calling again.",
                )
            )
        else:
            struck.extend(await _repetition(log, tool, digest, config))

    for rule, message in struck:
        strikes = await log.strike(rule)
        severity = CallVerdict.WARN if strikes <= config.grace else CallVerdict.BLOCK
        reasons.append(GuardReason(rule=rule, severity=severity, message=message))

    verdict = _worst(reasons)
    await log.note_verdict(tool, verdict, reasons, now)
    if verdict is not CallVerdict.BLOCK:
        await log.record(tool, kind, digest, now)
        used += 1
    return ToolCallCheck(
        verdict=verdict,
        reasons=reasons,
        cached_result=cached.value if cached else None,
        cached_ref=cached.ref if cached else None,
        resolved_args=grounding.resolved_args,
        budget=CallBudget(kind=kind.value, used=used, limit=limit),
        turn=log.turn,
    )


def _grounding_reasons(grounding: GroundingResult) -> list[GuardReason]:
    reasons = []
    if grounding.missing_refs:
        reasons.append(
            GuardReason(
                rule=GuardRule.MISSING_REFS,
                severity=CallVerdict.BLOCK,
                message=grounding_message([], grounding.missing_refs, unreadable=grounding.unreadable_refs),
            )
        )
    copied = [item for item in grounding.ungrounded if item.suggestion]
    if copied:
        reasons.append(
            GuardReason(
                rule=GuardRule.COPIED_VALUE, severity=CallVerdict.WARN, message=grounding_message(copied, [])
            )
        )
    return reasons


async def _repetition(
    log: CallLog, tool: str, digest: str, config: GuardConfig
) -> list[tuple[GuardRule, str]]:
    """Repeat, loop and runaway: the rules a polling tool is exempt from."""
    struck = []
    if await log.seen(digest):
        struck.append(
            (
                GuardRule.REPEAT,
                f"{tool} already ran with these arguments this turn; use the result you got instead of "
                "calling again.",
            )
        )
    elif config.loop_window:
        recent = await log.recent_tools(config.loop_window)
        same = sum(1 for name in recent if name == tool)
        if same >= config.loop_max_calls:
            struck.append(
                (
                    GuardRule.LOOP,
                    f"{tool} ran {same} times in the last {len(recent)} calls with changing arguments; "
                    "stop and rethink the approach, or answer with what you have.",
                )
            )
    if config.runaway_repeats:
        results = await recent_results(log.conn, log.namespace, log.session, tool, config.runaway_repeats)
        why = runaway_reason(results, config.runaway_repeats)
        if why:
            struck.append(
                (GuardRule.RUNAWAY, f"{tool} {why}; change the approach instead of calling it again.")
            )
    return struck


def _degenerate(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer past the float range
            return True
        return not math.isfinite(number) or abs(number) >= _ABSURD_MAGNITUDE
    if isinstance(value, str):
        return value.strip().lower() in _DEGENERATE_WORDS
    return False


def _worst(reasons: list[GuardReason]) -> CallVerdict:
    severities = {reason.severity for reason in reasons}
    for verdict in (CallVerdict.BLOCK, CallVerdict.WARN):
        if verdict in severities:
            return verdict
    return CallVerdict.ALLOW
