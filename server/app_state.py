"""What the server holds while it runs: the engine and whose memory it serves."""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from memvm.engine import Engine
from memvm.engine.scope import NamespaceScope, SessionScope
from memvm.server.subscriptions import NamespacedBus, Subscriptions
from memvm.server.tokens import token_namespace


class NoVerifiedToken(Exception):
    """A request reached a tool without a verified token although tokens are required."""


@dataclass
class Runtime:
    """What a request needs: the open engine and whose memory it is."""

    engine: Engine
    process_namespace: str
    default_session: str
    # With bearer tokens, each request's namespace is its token's; otherwise the process's.
    tokens_required: bool = False
    subscriptions: Subscriptions = field(default_factory=Subscriptions)
    # The subscriptions/listen bus, to deliver changes announced by other processes.
    bus: NamespacedBus | None = None
    # The work tree whose memory this process keeps apart (see engine/paging/projects.py).
    project: str | None = None

    @property
    def namespace(self) -> str:
        if not self.tokens_required:
            return self.process_namespace
        namespace = token_namespace()
        if namespace is None:
            raise NoVerifiedToken("no verified bearer token on this request")
        return namespace

    def session(self, requested: str | None) -> str:
        return requested or self.default_session

    def scope(self, requested_session: str | None = None) -> SessionScope:
        """Where a request acts: its namespace, the session it names (else the process's), the
        process's project; an ad-hoc session's calls are charged to the process's own session."""
        return self.engine.session(
            self.namespace,
            self.session(requested_session),
            project=self.project,
            host_session=self.default_session,
        )

    def namespace_scope(self) -> NamespaceScope:
        """The request's namespace as a whole, as this process's project sees it."""
        return self.engine.namespace(self.namespace, project=self.project)


class RuntimeHolder:
    """The process's one runtime: opened by its first user, closed when the last one leaves.

    The SSE transport runs the server's lifespan once per connection, and `memvm serve` holds the
    runtime for the whole run: all of them share this one engine, so a connection that ends closes
    nothing another still uses. Static resources get no request context in the SDK; they read the
    runtime from here too.
    """

    def __init__(self, open_runtime: Callable[[], Awaitable[Runtime]]) -> None:
        self._open_runtime = open_runtime
        self._runtime: Runtime | None = None
        self._users = 0
        self._lock = anyio.Lock()

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the server is not running")
        return self._runtime

    @asynccontextmanager
    async def using(self) -> AsyncIterator[Runtime]:
        """The runtime, opened if nobody holds it yet; closed on leaving if nobody else does."""
        async with self._lock:
            if self._runtime is None:
                self._runtime = await self._open_runtime()
            self._users += 1
            runtime = self._runtime
        try:
            yield runtime
        finally:
            # A connection cancelled on its way out must still give its hold back.
            with anyio.CancelScope(shield=True):
                async with self._lock:
                    self._users -= 1
                    if self._users == 0:
                        self._runtime = None
                        await runtime.engine.close()


# What a tool or resource function receives: `ctx.request_context.lifespan_context` is the Runtime.
ToolContext = Context[Runtime, Any]
