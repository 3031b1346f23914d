"""Who wants to hear about which resource, in either protocol era, kept apart by namespace.

Clients of the handshake era subscribe with `resources/subscribe`; `Subscriptions` keeps those per
namespace and per connection, within bounds, and forgets a connection's subscriptions when it
ends. Clients of the stateless era listen through `subscriptions/listen`, which the SDK serves
from a bus; `NamespacedBus` is that bus, delivering each event only to the streams opened in the
namespace of the request that published it.
"""

from collections import Counter
from collections.abc import Callable

import anyio
import anyio.lowlevel
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ServerEvent
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from memvm.server.sdk_internals import connection_of

# A host follows a few resources per session it shows; these leave room for that and no more, so
# a client cannot make the server hold memory without bound.
MAX_PER_CONNECTION = 32
MAX_PER_NAMESPACE = 1024
# Open subscriptions/listen streams per namespace; the SDK's own cap is for the whole process.
MAX_STREAMS_PER_NAMESPACE = 64


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


class NamespacedBus:
    """The `subscriptions/listen` bus: an event reaches only its own namespace's streams.

    The SDK's in-process bus hands every event to every open stream, so a stream that named
    another tenant's resource URIs (`memvm://current/manifest` is the same string for all of
    them) heard that tenant's changes. Both ends here run inside a request, the publisher in a
    tool call and the subscriber in its listen call, so `namespace()` tells whose each one is.
    """

    def __init__(self, namespace: Callable[[], str]) -> None:
        self._namespace = namespace
        self._listeners: dict[object, tuple[str, Callable[[ServerEvent], None]]] = {}

    def __len__(self) -> int:
        """How many listen streams are open, over every namespace."""
        return len(self._listeners)

    async def publish(self, event: ServerEvent) -> None:
        await self.publish_in(self._namespace(), event)

    async def publish_in(self, namespace: str, event: ServerEvent) -> None:
        """Deliver `event` to `namespace`'s streams (a change another process announced)."""
        for owner, listener in list(self._listeners.values()):
            if owner == namespace:
                listener(event)  # the SDK's listeners queue the event and never raise
        # As the SDK's bus does: let the streams drain between the events of a burst.
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        namespace = self._namespace()
        if sum(owner == namespace for owner, _ in self._listeners.values()) >= MAX_STREAMS_PER_NAMESPACE:
            raise MCPError(
                INVALID_REQUEST,
                f"This memory already has {MAX_STREAMS_PER_NAMESPACE} listen streams open; "
                "close one before opening another.",
            )
        token = object()
        self._listeners[token] = (namespace, listener)

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe
