"""Bound values, grounding and the checks on a proposed call: their verdicts, rules and results.

Plain dataclasses: a host's pre-tool hook reads them without importing pydantic. What the guard
tools answer a model, with each field described, is built from them at the server's edge
(server/guard_replies.py).
"""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


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


@dataclass(kw_only=True)
class BindResult:
    ref: str
    aliases: list[str]
    value_type: ValueType
    created: bool


@dataclass(kw_only=True)
class UngroundedLiteral:
    path: str
    value: int | float | str
    suggestion: str | None


@dataclass(kw_only=True)
class GroundingResult:
    verdict: GroundingVerdict
    ungrounded: list[UngroundedLiteral]
    missing_refs: list[str]
    unreadable_refs: dict[str, str] = field(default_factory=dict)
    resolved_args: Any
    user_messages_on_record: bool
    message: str


@dataclass(kw_only=True)
class GuardReason:
    rule: GuardRule
    severity: CallVerdict
    message: str


@dataclass(kw_only=True)
class CallBudget:
    kind: str
    used: int
    limit: int


@dataclass(kw_only=True)
class ToolCallCheck:
    verdict: CallVerdict
    reasons: list[GuardReason]
    cached_result: Any = None
    cached_ref: str | None = None
    resolved_args: Any
    budget: CallBudget
    turn: int
