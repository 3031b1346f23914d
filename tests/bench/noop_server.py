"""memvm's own server with one extra tool, `noop`, for the end-to-end benchmark's baseline.

    python tests/bench/noop_server.py DB stdio
    python tests/bench/noop_server.py DB streamable-http PORT

`noop` goes through the same process, transport, SDK dispatch and lifespan as memvm's tools and
does nothing, so a memvm tool's time minus noop's is what memvm itself adds. `minimal` as the
second argument serves a bare MCPServer with only `noop` instead (the start-up baseline).
"""

import sys

from mcp.server.mcpserver import MCPServer
from memvm.server.app import MemvmServer, build_server
from memvm.server.http import MAX_REQUEST_BYTES, transport_security
from memvm.server.http_serve import run_http
from memvm.server.settings import ServerSettings, ToolProfile, Transport


def noop() -> str:
    """Does nothing."""
    return "ok"


def main() -> None:
    db, transport, *rest = sys.argv[1:]
    if db == "minimal":
        server: MCPServer = MCPServer("minimal")
    else:
        server = build_server(ServerSettings(db=db, tools=ToolProfile.ALL))
    server.add_tool(noop)
    if transport == "stdio":
        server.run(transport="stdio")
    elif isinstance(server, MemvmServer):  # as `memvm serve --transport streamable-http` runs it
        run_http(
            server,
            Transport.STREAMABLE_HTTP,
            host="127.0.0.1",
            port=int(rest[0]),
            extra_hosts=[],
            tokens=None,
            log_level="WARNING",
        )
    else:
        port = int(rest[0])
        server.run(
            transport="streamable-http",
            host="127.0.0.1",
            port=port,
            max_request_body_size=MAX_REQUEST_BYTES,
            transport_security=transport_security("127.0.0.1", port, []),
        )


if __name__ == "__main__":
    main()
