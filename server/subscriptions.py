"""`resources/subscribe` for clients of the handshake era: who wants to hear about which URI.

Subscriptions are kept per namespace, so one tenant's working set never notifies another's
connections. A connection whose notification cannot be sent any more is dropped at that moment.
Clients of the stateless era listen through `subscriptions/listen`, which the SDK serves.
"""

from collections import defaultdict

import anyio
from mcp.server.session import ServerSession


def _connection(session: ServerSession) -> object:
    # The SDK wraps each request in a new ServerSession around one connection object; a
    # subscription belongs to the connection, so that is what identifies the subscriber.
    return getattr(session, "_connection", session)


class Subscriptions:
    def __init__(self) -> None:
        self._listeners: defaultdict[tuple[str, str], dict[object, ServerSession]] = defaultdict(dict)

    def add(self, namespace: str, uri: str, session: ServerSession) -> None:
        self._listeners[(namespace, uri)][_connection(session)] = session

    def remove(self, namespace: str, uri: str, session: ServerSession) -> None:
        self._listeners[(namespace, uri)].pop(_connection(session), None)

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
