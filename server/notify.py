"""Tell subscribers that a resource changed, in either protocol era."""

from memvm.server.app_state import ToolContext

_MANIFEST = "/manifest"


async def working_set_changed(ctx: ToolContext, session: str) -> None:
    """A session's working set changed, and with it the manifest that lists it."""
    runtime = ctx.request_context.lifespan_context
    for uri in _session_uris(session, runtime.default_session, "working-set"):
        await ctx.notify_resource_updated(uri)  # subscriptions/listen streams
        await runtime.subscriptions.notify(runtime.namespace, uri)  # resources/subscribe
    await manifest_changed(ctx, session)


async def manifest_changed(ctx: ToolContext, session: str) -> None:
    """Pages, a turn or a working set changed: the manifests that show them did too.

    Every manifest of the namespace lists its available pages, so a page stored in one session
    changes them all: each subscribed manifest of the namespace hears, not only this session's.
    """
    runtime = ctx.request_context.lifespan_context
    for uri in _session_uris(session, runtime.default_session, "manifest"):
        await ctx.notify_resource_updated(uri)
    for uri in runtime.subscriptions.subscribed(runtime.namespace):
        if uri.endswith(_MANIFEST):
            await runtime.subscriptions.notify(runtime.namespace, uri)


def _session_uris(session: str, default_session: str, resource: str) -> list[str]:
    uris = [f"memvm://sessions/{session}/{resource}"]
    if session == default_session:
        uris.append(f"memvm://current/{resource}")
    return uris
