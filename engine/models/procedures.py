"""Tool outcomes and what was learned from them: fixes, hints and guidance."""

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class Outcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


# Outcomes that carry an error worth learning from. A cancelled call says nothing about the tool.
ERROR_OUTCOMES = frozenset({Outcome.FAILURE, Outcome.PARTIAL, Outcome.TIMEOUT})


class ToolOutcome(BaseModel):
    """One finished tool call, as the host or the model reports it."""

    tool: str
    args: dict[str, Any]
    outcome: Outcome
    result: Any = None
    error_type: str | None = None
    error_message: str | None = None
    duration_ms: float | None = None
    goal: str | None = None


class FixLink(BaseModel):
    fixed_call_id: int = Field(description="The failed call this success fixed.")
    delta: dict[str, Any] = Field(
        description="What changed in the arguments: added, removed, changed{from, to}."
    )


class OutcomeResult(BaseModel):
    call_id: int
    fix: FixLink | None
    ref: str | None = Field(description="The result's reference ($vN) when it was bound.")
    page_id: str | None = Field(
        description="The tool_result page holding a large result; page_fault loads it."
    )
    runaway: str | None = Field(description="Why this tool's results look runaway, or null.")


class ErrorHint(BaseModel):
    error_type: str
    count: int
    example: str | None
    last_call_id: int
    last_at: float
    typical_fix: dict[str, Any] | None
    typical_fix_text: str | None
    fix_call_id: int | None
    fix_count: int


class SuccessHint(BaseModel):
    arg: str
    value: Any
    count: int
    goal: str | None
    last_call_id: int


class RecentCall(BaseModel):
    call_id: int
    outcome: Outcome
    session: str
    at: float
    error_type: str | None
    fixed_by: int | None


class ToolHints(BaseModel):
    tool: str
    calls: int
    success_rate: float
    mean_duration_ms: float | None
    last_at: float
    common_errors: list[ErrorHint]
    success_hints: list[SuccessHint]
    recent: list[RecentCall]


class FixGuidance(BaseModel):
    """A failure with this error, and the call that fixed it."""

    tool: str
    error_type: str
    failed_call_id: int
    fixed_call_id: int
    session: str
    at: float
    delta: dict[str, Any]
    description: str


class ProceduralKnowledge(BaseModel):
    tools: list[ToolHints]
    guidance: list[FixGuidance]
