"""Who may use the view: requests that carry the per-start token, on a Host the view was started
for, and (for anything that changes memory) from the view's own origin.

The token arrives once in the URL the command prints; the first page load trades it for a cookie
(HttpOnly, SameSite=Strict) and redirects to a URL without it, so it does not linger in the
address bar, the history or a Referer. A script on another site cannot send the cookie (strict),
cannot read answers (no CORS), and a rebound DNS name fails the Host check.
"""

import hmac
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "memvm_ui"
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


def allowed_hosts(host: str, port: int) -> set[str]:
    """Host header values a browser sends for the view's own address."""
    names = {host, "localhost", "127.0.0.1", "[::1]"} if host in ("127.0.0.1", "localhost", "::1") else {host}
    return {f"{name}:{port}" for name in names} | ({f"[{host}]:{port}"} if ":" in host else set())


class TokenGuard:
    """ASGI middleware: 400 for a foreign Host, 403 for a change from another origin, 401 without
    the token; otherwise the request goes on, and the first load with `?token=` sets the cookie."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = set(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        if headers.get("host", "") not in self.hosts:
            await _plain(send, 400, "This view answers only on the address it printed.")
            return
        origin = headers.get("origin")
        if scope["method"] in _CHANGES and origin not in {f"http://{host}" for host in self.hosts}:
            await _plain(send, 403, "Changes are accepted from the view's own page only.")
            return
        offered = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        if offered and self._valid(offered) and scope["path"] == "/":
            await _enter(send, offered)
            return
        if not self._valid(_cookie(headers.get("cookie", "")) or _bearer(headers.get("authorization", ""))):
            await _plain(send, 401, "Open the URL memvm ui printed (it carries the token).")
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)

    def _valid(self, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(offered.encode(), self.token.encode())


def _cookie(header: str) -> str:
    jar = SimpleCookie()
    try:
        jar.load(header)
    except Exception:
        return ""
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else ""


def _bearer(header: str) -> str:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


async def _enter(send: Send, token: str) -> None:
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", b"/"), (b"set-cookie", cookie.encode()), *_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": b""})


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
