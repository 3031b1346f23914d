"""Bound values, grounding and the checks on a proposed call: their verdicts, rules and results."""

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class ValueType(StrEnum):
    NUMBER = "number"
    STRING = "string"
    BOOLEAN = "boolean"
    LIST = "list"
    OBJECT = "object"
    # A value taken from a tool result that was forgotten: its number stays taken, its value is
    # gone (stored as JSON null), and a reference to it resolves to nothing.
    FORGOTTEN = "forgotten"


class GroundingVerdict(StrEnum):
    GROUNDED = "grounded"
    UNGROUNDED = "ungrounded"
    MISSING_REFS = "missing_refs"


class CallVerdict(StrEnum):
    ALLOW = "allow"
    WARN = "warn"
    BLOCK = "block"


class GuardRule(StrEnum):
    MISSING_REFS = "missing_refs"
    UNGROUNDED = "ungrounded"
    COPIED_VALUE = "copied_value"  # a literal equal to a bound value: pass its reference instead
    BUDGET = "budget"
    TOOL_CAP = "tool_cap"
    REPEAT = "repeat"
    LOOP = "loop"
    RUNAWAY = "runaway"


class BindResult(BaseModel):
    ref: str = Field(description="The reference to pass in later tool arguments, like $v3.")
    aliases: list[str] = Field(description="Other names for the same value, like $total.")
    value_type: ValueType
    created: bool = Field(description="False when this exact call and value were bound already.")


class UngroundedLiteral(BaseModel):
    path: str = Field(description="Where the number is in the arguments, like items[2].price.")
    value: int | float | str
    suggestion: str | None = Field(description="The reference holding this value, when one does.")


class GroundingResult(BaseModel):
    verdict: GroundingVerdict
    ungrounded: list[UngroundedLiteral]
    missing_refs: list[str]
    unreadable_refs: dict[str, str] = Field(
        default_factory=dict,
        description="Of missing_refs, those naming a part the bound value lacks, with what it has.",
    )
    resolved_args: Any = Field(
        description="The arguments with every reference replaced; null while a reference is missing."
    )
    user_messages_on_record: bool = Field(
        description="Whether the host has recorded this session's user messages, whose numbers count as sourced."
    )
    message: str


class GuardReason(BaseModel):
    rule: GuardRule
    severity: CallVerdict
    message: str


class CallBudget(BaseModel):
    kind: str = Field(
        description="discovery or execution, counted apart; workspace (an agent host's own tools) has no budget."
    )
    used: int
    limit: int = Field(description="Calls of this kind allowed this turn; 0 means no limit.")


class ToolCallCheck(BaseModel):
    verdict: CallVerdict
    reasons: list[GuardReason]
    cached_result: Any = Field(
        None, description="The result of the same call earlier this turn: use it instead of calling again."
    )
    cached_ref: str | None = None
    resolved_args: Any
    budget: CallBudget
    turn: int
