"""The `<procedural_memory>` block: what memvm learned about tools, as facts with provenance.

Each line states something that happened (which calls, in which session, on which day), never an
instruction. Lines go in order of use to the caller (guidance for the asked-about error first),
and a line is added only if the whole block still fits `max_tokens`, counted exactly.
"""

import json
from datetime import UTC, datetime

from memvm.engine.models.procedures import ErrorHint, FixGuidance, ProceduralKnowledge, ToolHints
from memvm.engine.paging.framing import neutralise
from memvm.engine.paging.tokens import TokenCounter
from pydantic import BaseModel

OPEN, CLOSE = "<procedural_memory>", "</procedural_memory>"
NOTHING_YET = "No outcomes are recorded for these tools yet."


class ProceduralHints(BaseModel):
    text: str
    tokens: int
    tools: list[ToolHints]
    guidance: list[FixGuidance]


def render_hints(knowledge: ProceduralKnowledge, counter: TokenCounter, max_tokens: int) -> ProceduralHints:
    lines = [_guidance_line(item) for item in knowledge.guidance]
    for tool in knowledge.tools:
        lines.append(_tool_line(tool))
        lines.extend(_error_line(tool.tool, error) for error in tool.common_errors)
        if worked := _worked_line(tool):
            lines.append(worked)
    if not lines:
        lines = [NOTHING_YET]
    # One fact per line, and no stored error text or argument can close the block or open another.
    lines = [neutralise(" ".join(line.splitlines())) for line in lines]
    kept: list[str] = []
    for line in lines:
        if counter.count(_block([*kept, line])) <= max_tokens:
            kept.append(line)
    text = _block(kept)
    return ProceduralHints(
        text=text, tokens=counter.count(text), tools=knowledge.tools, guidance=knowledge.guidance
    )


def _block(lines: list[str]) -> str:
    return "\n".join([OPEN, *lines, CLOSE])


def _day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def _quoted(text: str, limit: int = 80) -> str:
    return json.dumps(text if len(text) <= limit else text[: limit - 1] + "…", ensure_ascii=False)


def _guidance_line(item: FixGuidance) -> str:
    return (
        f"Earlier fix for {_quoted(item.error_type)}: {item.tool} call {item.failed_call_id} failed with it "
        f"(session {item.session}, {_day(item.at)}); call {item.fixed_call_id} succeeded after: {item.description}."
    )


def _tool_line(tool: ToolHints) -> str:
    duration = f", mean {tool.mean_duration_ms:g} ms" if tool.mean_duration_ms is not None else ""
    return (
        f"{tool.tool}: {tool.calls} recorded calls, {round(tool.success_rate * 100)}% succeeded{duration}; "
        f"last {_day(tool.last_at)}."
    )


def _error_line(tool: str, error: ErrorHint) -> str:
    line = (
        f"- {tool} error {_quoted(error.error_type)} seen {error.count}x "
        f"(last call {error.last_call_id}, {_day(error.last_at)})"
    )
    if error.typical_fix_text:
        line += f"; fixed {error.fix_count}x, last by call {error.fix_call_id}: {error.typical_fix_text}"
    return line + "."


def _worked_line(tool: ToolHints) -> str | None:
    if not tool.success_hints:
        return None
    goal = f" for goal {_quoted(tool.success_hints[0].goal)}" if tool.success_hints[0].goal else ""
    values = "; ".join(
        f"{hint.arg}={json.dumps(hint.value, ensure_ascii=False)[:60]} ({hint.count}x, last call {hint.last_call_id})"
        for hint in tool.success_hints
    )
    return f"- {tool.tool} succeeded{goal} with {values}."
