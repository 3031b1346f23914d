"""The browser view beside `memvm serve` over HTTP, at /ui/: each bearer token of the tokens file
sees its own namespace, as it does through MCP, on the engine the server already holds."""

from mcp.server.transport_security import TransportSecuritySettings
from memvm.server.app_state import RuntimeHolder
from memvm.server.tokens import NamespaceTokens
from memvm.ui.app import create_app
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Mount, Route

VIEW_PATH = "/ui"


def allowed_host(host: str, allowed: list[str]) -> bool:
    """The Host check MCP requests get: an allowed name exactly, or `name:*` for it on any port."""
    return host in allowed or any(
        pattern.endswith(":*") and host.startswith(pattern[:-1]) and host[len(pattern) - 1 :].isdigit()
        for pattern in allowed
    )


def mount_view(
    app: Starlette, runtimes: RuntimeHolder, tokens: dict[str, str], security: TransportSecuritySettings
) -> None:
    verifier = NamespaceTokens(tokens)

    async def namespace_of(token: str) -> str | None:
        access = await verifier.verify_token(token) if token else None
        return access.client_id if access else None

    view = create_app(
        lambda: runtimes.runtime.engine,
        namespace_of=namespace_of,
        host_allowed=lambda host: allowed_host(host, security.allowed_hosts),
    )

    async def to_slash(request: Request) -> RedirectResponse:
        # The page's addresses are relative to /ui/.
        return RedirectResponse(f"{VIEW_PATH}/")

    app.router.routes += [Route(VIEW_PATH, to_slash), Mount(VIEW_PATH, app=view)]
