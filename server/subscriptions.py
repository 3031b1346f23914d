"""`resources/subscribe` for clients of the handshake era: who wants to hear about which URI.

Subscriptions are kept per namespace and per connection, within bounds, and a connection's are
forgotten when it ends. Clients of the stateless era listen through `subscriptions/listen`,
which the SDK serves.
"""

from collections import Counter

import anyio
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from memvm.server.sdk_internals import connection_of

# A host follows a few resources per session it shows; these leave room for that and no more, so
# a client cannot make the server hold memory without bound.
MAX_PER_CONNECTION = 32
MAX_PER_NAMESPACE = 1024


class SubscriptionRefused(Exception):
    """A subscription past a bound; the message says what to do instead."""


class Subscriptions:
    """`resources/subscribe`: which connection listens to which URI, per namespace."""

    def __init__(self) -> None:
        # A subscription belongs to the connection, not to the per-request session it came with.
        self._listeners: dict[tuple[str, str], dict[Connection, ServerSession]] = {}
        self._held: dict[Connection, set[tuple[str, str]]] = {}
        self._per_namespace: Counter[str] = Counter()

    def __len__(self) -> int:
        """How many subscriptions are held, over every connection."""
        return sum(len(keys) for keys in self._held.values())

    def add(self, namespace: str, uri: str, session: ServerSession) -> None:
        connection = connection_of(session)
        key = (namespace, uri)
        held = self._held.get(connection)
        if held is not None and key in held:
            self._listeners[key][connection] = session
            return
        if held is not None and len(held) >= MAX_PER_CONNECTION:
            raise SubscriptionRefused(
                f"This connection already follows {MAX_PER_CONNECTION} resources; "
                "unsubscribe from one before subscribing to another."
            )
        if self._per_namespace[namespace] >= MAX_PER_NAMESPACE:
            raise SubscriptionRefused(
                f"This memory already has {MAX_PER_NAMESPACE} subscriptions open; "
                "unsubscribe elsewhere or try again after other clients disconnect."
            )
        if held is None:
            held = self._held[connection] = set()
            # The SDK unwinds this stack when the connection ends, however it ends.
            connection.exit_stack.callback(self._forget, connection)
        held.add(key)
        self._listeners.setdefault(key, {})[connection] = session
        self._per_namespace[namespace] += 1

    def remove(self, namespace: str, uri: str, session: ServerSession) -> None:
        self._drop(connection_of(session), (namespace, uri))

    def subscribed(self, namespace: str) -> list[str]:
        """The URIs someone in `namespace` listens to."""
        return [uri for owner, uri in self._listeners if owner == namespace]

    async def notify(self, namespace: str, uri: str) -> None:
        listeners = self._listeners.get((namespace, uri))
        if not listeners:
            return
        for connection, session in list(listeners.items()):
            try:
                await session.send_resource_updated(uri)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                # The connection went away between its last request and this change.
                self._drop(connection, (namespace, uri))

    def _drop(self, connection: Connection, key: tuple[str, str]) -> None:
        held = self._held.get(connection)
        if held is None or key not in held:
            return
        held.discard(key)
        listeners = self._listeners[key]
        listeners.pop(connection, None)
        if not listeners:
            del self._listeners[key]
        self._per_namespace[key[0]] -= 1
        if self._per_namespace[key[0]] <= 0:
            del self._per_namespace[key[0]]

    def _forget(self, connection: Connection) -> None:
        for key in list(self._held.get(connection, ())):
            self._drop(connection, key)
        self._held.pop(connection, None)
