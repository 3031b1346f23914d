"""Who may use the view: API requests that carry the per-start token, on a loopback Host, and
(for anything that changes memory) from the page's own origin.

The token travels in the URL's fragment (`/#token=...`), which browsers never send to a server:
the page's script reads it, keeps it in the tab's session storage, drops it from the address bar,
and sends it as a bearer token with each API request. No cookie carries it, because cookies do
not keep to a port: every other server on 127.0.0.1 would be sent it, and nothing is ambient, so
another site cannot make the browser act with it (no CSRF). The page and its assets hold no data
and are served to anyone who reaches the port; the API answers 401 without the token. A rebound
DNS name fails the Host check: only loopback names are answered (on any port, so an SSH forward
to another local port works).
"""

import hmac
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# A bearer token to the namespace it may see, or None for a token that opens nothing.
NamespaceOf = Callable[[str], Awaitable[str | None]]
# Where the namespace of the request's token is left for the API.
NAMESPACE_KEY = "memvm.namespace"

_LOOPBACK_NAMES = {"127.0.0.1", "localhost", "[::1]"}
_CHANGES = {"POST", "PUT", "PATCH", "DELETE"}
# Served with every answer: no framing, no inline script, nothing from elsewhere.
_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
]


def loopback_host(header: str) -> bool:
    """A Host header naming this machine by a loopback name, with or without a port."""
    name, _, port = header.rpartition(":") if not header.endswith("]") else (header, "", "")
    if not name:
        name, port = header, ""
    return name in _LOOPBACK_NAMES and (port == "" or port.isdigit())


def one_token(token: str, namespace: str) -> NamespaceOf:
    """`memvm ui`'s tokens: the one made at start, for the one namespace shown."""

    async def namespace_of(offered: str) -> str | None:
        return namespace if offered and hmac.compare_digest(offered.encode(), token.encode()) else None

    return namespace_of


class TokenGuard:
    """ASGI middleware: 400 for a Host not allowed, 403 for a change from another origin, 401 for an
    API request without a token that opens a namespace; every answer gets the security headers."""

    def __init__(
        self, app: ASGIApp, *, namespace_of: NamespaceOf, host_allowed: Callable[[str], bool] = loopback_host
    ) -> None:
        self.app = app
        self.namespace_of = namespace_of
        self.host_allowed = host_allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        host = headers.get("host", "")
        if not self.host_allowed(host):
            await _plain(send, 400, "This view answers only on the addresses it was started for.")
            return
        if scope["method"] in _CHANGES and headers.get("origin") not in (f"http://{host}", f"https://{host}"):
            await _plain(send, 403, "Changes are accepted from the view's own page only.")
            return
        path = scope["path"][len(scope.get("root_path", "")) :] if scope.get("root_path") else scope["path"]
        if path.startswith("/api/"):
            namespace = await self.namespace_of(_bearer(headers.get("authorization", "")))
            if namespace is None:
                await _plain(send, 401, "Open the URL with the view's token (memvm ui prints it).")
                return
            scope = {**scope, NAMESPACE_KEY: namespace}

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)


def _bearer(header: str) -> str:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})
