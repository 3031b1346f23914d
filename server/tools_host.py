"""Host-facing tools (profile `all`), for agent loops that manage the conversation themselves."""

from typing import Annotated

from mcp.server.mcpserver.tools import Tool
from memvm.engine.models.writes import IngestMessage, IngestResult, PageState
from memvm.resources.context import DeveloperMessage, render_developer_message
from memvm.resources.rules import RuleMode
from memvm.server.app_state import ToolContext
from memvm.server.arguments import (
    Content,
    ContextMode,
    PageId,
    SessionName,
    SpeakerName,
    SpeakerRole,
    SystemPrompt,
)
from memvm.server.notify import manifest_changed, working_set_changed
from memvm.server.tool_listing import READS, WRITES, WRITES_ONCE
from pydantic import BaseModel, ConfigDict, Field


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    role: SpeakerRole
    content: Annotated[Content, Field(description="What was said.")]
    name: SpeakerName = None


# What begin_turn answers (no docstring: it would become the schema's description).
class TurnReply(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    turn: int
    faults_left: int


async def ingest(
    messages: Annotated[
        list[Message], Field(min_length=1, max_length=500, description="The messages, oldest first.")
    ],
    ctx: ToolContext,
    session: SessionName = None,
) -> IngestResult:
    """Record conversation messages as transcript pages and load them into the working set.

    Each user message starts a new turn. Returns the new page ids and the current turn.
    """
    runtime = ctx.request_context.lifespan_context
    result = await runtime.scope(session).ingest(
        messages=[IngestMessage(role=m.role, content=m.content, name=m.name) for m in messages]
    )
    await working_set_changed(ctx, runtime.session(session))
    return result


async def begin_turn(ctx: ToolContext, session: SessionName = None) -> TurnReply:
    """Start a new turn: the page-fault allowance resets. Returns the turn number and faults left."""
    runtime = ctx.request_context.lifespan_context
    result = await runtime.scope(session).begin_turn()
    await manifest_changed(ctx, runtime.session(session))
    return TurnReply.model_validate(result)


async def pin_page(
    page_id: PageId,
    ctx: ToolContext,
    pinned: Annotated[bool, Field(description="true pins the page, false unpins it.")] = True,
) -> PageState:
    """Pin a page (kept in the working set, never evicted) or unpin it. Returns the page's state."""
    runtime = ctx.request_context.lifespan_context
    state = await runtime.scope().pin_page(page_id=page_id, pinned=pinned)
    await working_set_changed(ctx, runtime.default_session)
    return state


async def build_context(
    ctx: ToolContext,
    mode: ContextMode = RuleMode.STRICT,
    system_prompt: SystemPrompt = None,
    session: SessionName = None,
) -> DeveloperMessage:
    """The developer message to send the model: system prompt, rules, manifest and packed context.

    Passive mode sends the context alone. `tokens` is its exact size; the rules, manifest and context
    together stay within the configured budget.
    """
    runtime = ctx.request_context.lifespan_context
    return await render_developer_message(runtime.scope(session), mode=mode, system_prompt=system_prompt)


def tools() -> list[Tool]:
    return [
        Tool.from_function(ingest, annotations=WRITES),
        Tool.from_function(begin_turn, annotations=WRITES),
        Tool.from_function(pin_page, annotations=WRITES_ONCE),
        Tool.from_function(build_context, annotations=READS),
    ]
