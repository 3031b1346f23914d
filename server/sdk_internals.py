"""The one private attribute of the MCP SDK memvm reaches, here and nowhere else.

What mcp 2.3 offers publicly is used everywhere else: tools are built as `Tool` objects and
handed to `MCPServer(tools=...)` whole, completion is registered with `MCPServer.completion()`,
the protocol methods MCPServer leaves out are answered by server middleware
(memvm.server.protocol_handlers), and HTTP sessions are counted and ended from what passes
through an ASGI middleware (memvm.server.session_quota). What it does not offer:

- `connection_of`: neither `ServerSession` nor `ServerRequestContext` exposes the connection a
  request came in on; `mcp.server.context.Context.connection` would, but the runner does not
  build that context for handlers or middleware. Subscriptions are held per connection and
  forgotten through its exit stack, which the SDK unwinds however the connection ends.

When an SDK release moves it, the call raises `SdkMoved` naming the attribute, and
tests/server/test_sdk_internals.py fails with the same sentence.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version

from mcp.server.connection import Connection
from mcp.server.session import ServerSession


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


def connection_of(session: ServerSession) -> Connection:
    """The connection a request arrived on (ServerSession._connection).

    The SDK wraps each request in a new ServerSession around one connection object, so this is
    what stays the same across one client's requests.
    """
    with _reaching("ServerSession._connection"):
        return session._connection
