"""The model-facing guard tools: bind_value, check_ungrounded, check_tool_call."""

from mcp.server.mcpserver.tools import Tool
from memvm.server.app_state import ToolContext
from memvm.server.arguments import AliasName, SessionName, ToolArguments, ToolName, ToolValue
from memvm.server.guard_replies import BindReply, GroundingReply, ToolCallReply
from memvm.server.tool_listing import READS, WRITES, WRITES_ONCE


async def bind_value(
    tool: ToolName,
    args: ToolArguments,
    value: ToolValue,
    ctx: ToolContext,
    name: AliasName = None,
    session: SessionName = None,
) -> BindReply:
    """Keep a tool's result under a reference ($v1, $v2, …) to pass in later calls instead of the value.

    An argument that is exactly "$v1" becomes the value itself (a number stays a number); "$v1"
    inside longer text is filled in. Binding the same call and value again returns the same
    reference.
    """
    runtime = ctx.request_context.lifespan_context
    bound = await runtime.scope(session).bind_value(tool=tool, args=args, value=value, name=name)
    return BindReply.model_validate(bound)


async def check_ungrounded(
    tool: ToolName, args: ToolArguments, ctx: ToolContext, session: SessionName = None
) -> GroundingReply:
    """Check where each number in a tool call's arguments came from, before you make the call.

    Numbers the user wrote, numbers in bound results and small constants are fine. A number equal
    to a bound value comes back with its reference as `suggestion`: pass that instead. Any other
    number has no source: get it from the user or a tool. `resolved_args` has the references filled
    in (null while one is unknown).
    """
    runtime = ctx.request_context.lifespan_context
    return GroundingReply.model_validate(await runtime.scope(session).check_ungrounded(args=args))


async def check_tool_call(
    tool: ToolName, args: ToolArguments, ctx: ToolContext, session: SessionName = None
) -> ToolCallReply:
    """Ask every guard about a tool call before making it: allow, warn or block, with reasons.

    Covers numbers without a source, unknown references, the turn's call budget, per-tool caps,
    repeats, loops and runaway results. On "allow", make the call with `resolved_args`. On "warn",
    fix what the reasons name (pass the suggested reference, ask the user for the number) and check
    again; call unchanged only when sure it is right, as the same warning soon becomes a block. On
    "block", do not make the call. When `cached_result` is set, the call already ran: use that. Every
    check but a block counts toward the budget.
    """
    runtime = ctx.request_context.lifespan_context
    return ToolCallReply.model_validate(await runtime.scope(session).check_tool_call(tool=tool, args=args))


def tools() -> list[Tool]:
    return [
        Tool.from_function(bind_value, annotations=WRITES_ONCE),
        Tool.from_function(check_ungrounded, annotations=READS),
        Tool.from_function(check_tool_call, annotations=WRITES),
    ]
