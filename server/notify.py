"""Tell subscribers of a working-set resource that it changed, in either protocol era."""

from mcp.server.mcpserver import Context


async def working_set_changed(ctx: Context, session: str) -> None:
    runtime = ctx.request_context.lifespan_context
    uris = [f"memvm://sessions/{session}/working-set"]
    if session == runtime.default_session:
        uris.append("memvm://current/working-set")
    for uri in uris:
        await ctx.notify_resource_updated(uri)  # subscriptions/listen streams
        await runtime.subscriptions.notify(runtime.namespace, uri)  # resources/subscribe
