"""`resources/subscribe` for clients of the handshake era: who wants to hear about which URI.

Subscriptions are kept per namespace, so one tenant's working set never notifies another's
connections. A connection whose notification cannot be sent any more is dropped at that moment.
Clients of the stateless era listen through `subscriptions/listen`, which the SDK serves.
"""

from collections import defaultdict

import anyio
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from memvm.server.sdk_internals import connection_of


class Subscriptions:
    def __init__(self) -> None:
        # A subscription belongs to the connection, not to the per-request session it came with.
        self._listeners: defaultdict[tuple[str, str], dict[Connection, ServerSession]] = defaultdict(dict)

    def add(self, namespace: str, uri: str, session: ServerSession) -> None:
        self._listeners[(namespace, uri)][connection_of(session)] = session

    def remove(self, namespace: str, uri: str, session: ServerSession) -> None:
        self._listeners[(namespace, uri)].pop(connection_of(session), None)

    def subscribed(self, namespace: str) -> list[str]:
        """The URIs someone in `namespace` listens to."""
        return [
            uri for (owner, uri), listeners in self._listeners.items() if owner == namespace and listeners
        ]

    async def notify(self, namespace: str, uri: str) -> None:
        listeners = self._listeners.get((namespace, uri))
        if not listeners:
            return
        for connection, session in list(listeners.items()):
            try:
                await session.send_resource_updated(uri)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                # The connection went away between its last request and this change.
                listeners.pop(connection, None)
