"""What the guard tools answer a model: the engine's verdicts (engine/models/guards.py) as the
pydantic models whose schemas the tools publish, each field described for the model.

Kept at the server's edge: the engine's own verdicts are plain dataclasses, so that a host's
pre-tool hook checks a call without importing pydantic.
"""

from typing import Any

from memvm.engine.models.guards import CallVerdict, GroundingVerdict, GuardRule, ValueType
from pydantic import BaseModel, ConfigDict, Field


class BindReply(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    ref: str = Field(description="The reference to pass in later tool arguments, like $v3.")
    aliases: list[str] = Field(description="Other names for the same value, like $total.")
    value_type: ValueType
    created: bool = Field(description="False when this exact call and value were bound already.")


class UngroundedLiteralReply(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    path: str = Field(description="Where the number is in the arguments, like items[2].price.")
    value: int | float | str
    suggestion: str | None = Field(description="The reference holding this value, when one does.")


class GroundingReply(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    verdict: GroundingVerdict
    ungrounded: list[UngroundedLiteralReply]
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


class GuardReasonReply(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    rule: GuardRule
    severity: CallVerdict
    message: str


class CallBudgetReply(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    kind: str = Field(
        description="discovery or execution, counted apart; workspace (an agent host's own tools) has no budget."
    )
    used: int
    limit: int = Field(description="Calls of this kind allowed this turn; 0 means no limit.")


class ToolCallReply(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    verdict: CallVerdict
    reasons: list[GuardReasonReply]
    cached_result: Any = Field(
        None, description="The result of the same call earlier this turn: use it instead of calling again."
    )
    cached_ref: str | None = None
    resolved_args: Any
    budget: CallBudgetReply
    turn: int
