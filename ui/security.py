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

from starlette.types import ASGIApp, Message, Receive, Scope, Send

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


class TokenGuard:
    """ASGI middleware: 400 for a Host that is not loopback, 403 for a change from another origin,
    401 for an API request without the token; every answer gets the security headers."""

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        host = headers.get("host", "")
        if not loopback_host(host):
            await _plain(send, 400, "This view answers only on this machine's loopback address.")
            return
        if scope["method"] in _CHANGES and headers.get("origin") != f"http://{host}":
            await _plain(send, 403, "Changes are accepted from the view's own page only.")
            return
        if scope["path"].startswith("/api/") and not self._valid(_bearer(headers.get("authorization", ""))):
            await _plain(send, 401, "Open the URL memvm ui printed (it carries the token).")
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)

    def _valid(self, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(offered.encode(), self.token.encode())


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
