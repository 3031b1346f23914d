"""Tell subscribers that a resource changed, in either protocol era, in every serving process.

A change is delivered here to the streams and subscriptions of this process, then announced to
the other processes serving the same database (PostgreSQL's LISTEN/NOTIFY; on SQLite there is no
one to tell), which deliver it to theirs: a client subscribed through one process hears the
changes another process's clients made.
"""

from mcp.server.subscriptions import ResourceUpdated
from memvm.server.app_state import Runtime, ToolContext

_MANIFEST = "/manifest"
_WORKING_SET = "working-set"
_MANIFESTS = "manifest"


async def working_set_changed(ctx: ToolContext, session: str) -> None:
    """A session's working set changed, and with it the manifest that lists it."""
    await _changed(ctx.request_context.lifespan_context, _WORKING_SET, session)


async def manifest_changed(ctx: ToolContext, session: str) -> None:
    """Pages, a turn or a working set changed: the manifests that show them did too."""
    await _changed(ctx.request_context.lifespan_context, _MANIFESTS, session)


async def _changed(runtime: Runtime, kind: str, session: str) -> None:
    namespace = runtime.namespace
    await deliver(runtime, namespace, kind, session)
    await runtime.engine.db.announce(namespace, f"{kind} {session}")


async def delivered_from_elsewhere(runtime: Runtime, namespace: str, change: str) -> None:
    """A change another process announced: delivered here as if made here."""
    kind, _, session = change.partition(" ")
    if kind in (_WORKING_SET, _MANIFESTS) and session:
        await deliver(runtime, namespace, kind, session)


async def deliver(runtime: Runtime, namespace: str, kind: str, session: str) -> None:
    """Notify this process's subscribers in `namespace` that `session`'s `kind` changed.

    Every manifest of the namespace lists its available pages, so a page stored in one session
    changes them all: each subscribed manifest of the namespace hears, not only this session's.
    """
    if kind == _WORKING_SET:
        for uri in _session_uris(session, runtime.default_session, _WORKING_SET):
            await _notify(runtime, namespace, uri)
    for uri in _session_uris(session, runtime.default_session, _MANIFESTS):
        if runtime.bus is not None:
            await runtime.bus.publish_in(namespace, ResourceUpdated(uri=uri))
    for uri in runtime.subscriptions.subscribed(namespace):
        if uri.endswith(_MANIFEST):
            await runtime.subscriptions.notify(namespace, uri)


async def _notify(runtime: Runtime, namespace: str, uri: str) -> None:
    if runtime.bus is not None:
        await runtime.bus.publish_in(namespace, ResourceUpdated(uri=uri))  # subscriptions/listen streams
    await runtime.subscriptions.notify(namespace, uri)  # resources/subscribe


def _session_uris(session: str, default_session: str, resource: str) -> list[str]:
    uris = [f"memvm://sessions/{session}/{resource}"]
    if session == default_session:
        uris.append(f"memvm://current/{resource}")
    return uris
