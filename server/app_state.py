"""What the server holds while it runs: the engine and whose memory it serves."""

from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context
from memvm.engine import Engine
from memvm.server.subscriptions import Subscriptions
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


class RuntimeHolder:
    """Static resources get no request context in the SDK; they read the runtime from here."""

    def __init__(self) -> None:
        self._runtime: Runtime | None = None

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the server is not running")
        return self._runtime

    def set(self, runtime: Runtime | None) -> None:
        self._runtime = runtime


# What a tool or resource function receives: `ctx.request_context.lifespan_context` is the Runtime.
ToolContext = Context[Runtime, Any]
