"""The model-facing guard tools: bind_value, check_ungrounded, check_tool_call."""

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from memvm.engine.models import BindResult, GroundingResult, ToolCallCheck
from memvm.server.app_state import Runtime, ToolContext
from memvm.server.arguments import AliasName, SessionName, ToolArguments, ToolName, ToolValue


async def bind_value(
    tool: ToolName,
    args: ToolArguments,
    value: ToolValue,
    ctx: ToolContext,
    name: AliasName = None,
    session: SessionName = None,
) -> BindResult:
    """Keep a tool's result under a reference ($v1, $v2, …) to pass in later tool calls.

    Call it when a tool returns a value you will use again. Later, write the reference instead of
    copying the value: an argument that is exactly "$v1" becomes the value itself (a number stays a
    number); "$v1" inside longer text is filled in. Give `name` to also call it "$name". Binding the
    same call and value again returns the same reference.
    """
    runtime = ctx.request_context.lifespan_context
    return await runtime.engine.bind_value(
        namespace=runtime.namespace,
        session=runtime.session(session),
        tool=tool,
        args=args,
        value=value,
        name=name,
    )


async def check_ungrounded(
    tool: ToolName, args: ToolArguments, ctx: ToolContext, session: SessionName = None
) -> GroundingResult:
    """Check where each number in a tool call's arguments came from, before you make the call.

    Numbers the user wrote, numbers inside bound results and small structural constants are fine.
    A number equal to a bound value comes back with its reference as `suggestion`: pass that
    instead. Any other number has no source: get it from the user or a tool. `resolved_args` are
    the arguments with references filled in (null while a reference is unknown).
    """
    runtime = ctx.request_context.lifespan_context
    return await runtime.engine.check_ungrounded(
        namespace=runtime.namespace, session=runtime.session(session), args=args
    )


async def check_tool_call(
    tool: ToolName, args: ToolArguments, ctx: ToolContext, session: SessionName = None
) -> ToolCallCheck:
    """Ask every guard about a tool call before making it: allow, warn or block, with reasons.

    Covers numbers without a source, unknown references, this turn's call budget, per-tool caps,
    repeated and looping calls, and results that have run away. On "block", do not make the call:
    follow the reasons. When `cached_result` is set, that call already ran: use the result. The
    call is counted unless blocked; run it with `resolved_args`.
    """
    runtime = ctx.request_context.lifespan_context
    return await runtime.engine.check_tool_call(
        namespace=runtime.namespace, session=runtime.session(session), tool=tool, args=args
    )


def register(server: MCPServer[Runtime]) -> None:
    server.add_tool(
        bind_value,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    server.add_tool(
        check_ungrounded,
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    server.add_tool(
        check_tool_call,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
        ),
    )
