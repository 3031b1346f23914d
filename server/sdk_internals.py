"""The MCP SDK's private attributes memvm needs, reached here and nowhere else.

What mcp 2.3 offers publicly is used everywhere else: tools are built as `Tool` objects and
handed to `MCPServer(tools=...)` whole, completion is registered with `MCPServer.completion()`,
the listen handler memvm bounds is its own `ListenHandler`, and prompt checks are
`MCPServer.middleware`. What it does not offer, each function below reaches, and says which
attribute:

- `add_request_handler`: MCPServer has no public way to serve a spec method it leaves out
  (resources/subscribe and unsubscribe, logging/setLevel) or to replace one it serves
  (subscriptions/listen, unbounded). Its low-level `Server.add_request_handler` is public, but
  MCPServer keeps that server private, and `Extension` methods refuse spec methods by design.
  Middleware could answer such a method, but the capabilities advertised (`resources.subscribe`,
  `logging`) come only from the handlers registered there.
- `connection_of`: neither `ServerSession` nor `ServerRequestContext` exposes the connection a
  request came in on; `mcp.server.context.Context.connection` would, but the runner does not
  build that context for handlers. Subscriptions are held per connection and forgotten through
  its exit stack.
- `open_session_ids`, `end_session`: `StreamableHTTPSessionManager` neither lists its sessions
  nor ends one; memvm bounds the sessions each namespace holds.

When an SDK release moves one of these, the call raises `SdkMoved` naming the attribute, and
tests/server/test_sdk_internals.py fails with the same sentence.
"""

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from typing import Any, TypeVar

from mcp.server.connection import Connection
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import BaseModel

ParamsT = TypeVar("ParamsT", bound=BaseModel)
LifespanT = TypeVar("LifespanT")


class SdkMoved(RuntimeError):
    """The installed mcp release no longer has a private attribute memvm relies on."""


@contextmanager
def _reaching(attribute: str) -> Iterator[None]:
    try:
        yield
    except AttributeError as exc:
        raise SdkMoved(
            f"mcp {version('mcp')} has no {attribute}, which memvm.server.sdk_internals reaches; "
            "find where this release keeps it and update that module."
        ) from exc


def add_request_handler(
    server: MCPServer[LifespanT],
    method: str,
    params_type: type[ParamsT],
    handler: Callable[[ServerRequestContext[LifespanT, Any], ParamsT], Awaitable[HandlerResult]],
) -> None:
    """Serve a protocol method MCPServer does not, on its low-level server (MCPServer._lowlevel_server).

    Registering there also makes the server advertise the matching capability.
    """
    with _reaching("MCPServer._lowlevel_server"):
        lowlevel = server._lowlevel_server
    lowlevel.add_request_handler(method, params_type, handler)


def connection_of(session: ServerSession) -> Connection:
    """The connection a request arrived on (ServerSession._connection).

    The SDK wraps each request in a new ServerSession around one connection object, so this is
    what stays the same across one client's requests.
    """
    with _reaching("ServerSession._connection"):
        return session._connection


def open_session_ids(manager: StreamableHTTPSessionManager) -> set[str]:
    """The ids of the handshake-era sessions the manager keeps (its _server_instances)."""
    with _reaching("StreamableHTTPSessionManager._server_instances"):
        return set(manager._server_instances)


async def end_session(manager: StreamableHTTPSessionManager, session_id: str) -> None:
    """End a session as its idle timeout would: forgotten at once, its id answering 404 from now
    on (StreamableHTTPSessionManager._discard_session)."""
    with _reaching("StreamableHTTPSessionManager._server_instances"):
        transport = manager._server_instances.get(session_id)
    if transport is None:
        return
    with _reaching("StreamableHTTPSessionManager._discard_session"):
        discard = manager._discard_session
    await discard(session_id, transport)
