"""The model-facing procedural memory tools: record_tool_outcome, get_procedural_hints."""

from typing import Annotated

from mcp.server.mcpserver.tools import Tool
from memvm.engine.models.procedures import OutcomeResult, ToolOutcome
from memvm.resources.procedural import ProceduralHints, render_hints
from memvm.server.app_state import ToolContext
from memvm.server.arguments import (
    CallOutcome,
    ErrorMessage,
    ErrorType,
    Goal,
    SessionName,
    ToolArguments,
    ToolName,
    ToolValue,
)
from memvm.server.notify import manifest_changed
from memvm.server.tool_listing import READS, WRITES
from pydantic import Field


async def record_tool_outcome(
    tool: ToolName,
    args: ToolArguments,
    outcome: CallOutcome,
    ctx: ToolContext,
    result: ToolValue = None,
    error_type: ErrorType = None,
    error_message: ErrorMessage = None,
    duration_ms: Annotated[
        float | None, Field(ge=0, le=86_400_000, description="How long the call took, in milliseconds.")
    ] = None,
    goal: Goal = None,
    session: SessionName = None,
) -> OutcomeResult:
    """Record how a tool call went, so later calls in any conversation can learn from it.

    Call it after each tool call, with the result or the error. A success right after a failure of
    the same tool is recorded as its fix (`fix` shows what changed). A small result is bound as `ref`
    ($vN); a large one is stored as page `page_id` for page_fault. `runaway` says if the tool's
    results look stuck.
    """
    runtime = ctx.request_context.lifespan_context
    recorded = await runtime.scope(session).record_tool_outcome(
        call=ToolOutcome(
            tool=tool,
            args=args,
            outcome=outcome,
            result=result,
            error_type=error_type,
            error_message=error_message,
            duration_ms=duration_ms,
            goal=goal,
        )
    )
    if recorded.page_id is not None:  # a large result became a page the manifest may list
        await manifest_changed(ctx, runtime.session(session))
    return recorded


async def get_procedural_hints(
    ctx: ToolContext,
    tools: Annotated[
        list[ToolName] | None, Field(max_length=20, description="Tools to ask about; else the likeliest.")
    ] = None,
    goal: Annotated[Goal, Field(description="What you are trying to do, in a few words.")] = None,
    error_type: Annotated[
        ErrorMessage, Field(description="An error's name or message, to see what fixed it before.")
    ] = None,
    max_tokens: Annotated[int, Field(ge=30, le=8_000, description="The most tokens `text` may take.")] = 600,
) -> ProceduralHints:
    """What earlier calls taught about tools: success rates, common errors and their fixes, values that worked.

    Call it before using a tool that failed before, or after an error (pass it as `error_type`) to
    see what fixed it last time. `text` is a <procedural_memory> block within `max_tokens`; `tools`
    holds the same, structured.
    """
    runtime = ctx.request_context.lifespan_context
    knowledge = await runtime.namespace_scope().procedural_knowledge(
        tools=tools, goal=goal, error_type=error_type
    )
    return render_hints(knowledge, runtime.engine.counter, max_tokens)


def tools() -> list[Tool]:
    return [
        Tool.from_function(record_tool_outcome, annotations=WRITES),
        Tool.from_function(get_procedural_hints, annotations=READS),
    ]
