"""The view as an ASGI application: the API behind the token guard, and the page and its assets,
which hold no data."""

from collections.abc import Callable
from pathlib import Path

from memvm.engine import Engine
from memvm.ui.api import routes
from memvm.ui.exports import Exports
from memvm.ui.security import NamespaceOf, TokenGuard, loopback_host
from starlette.applications import Starlette
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

STATIC = Path(__file__).parent / "static"


def create_app(
    engine_of: Callable[[], Engine],
    *,
    namespace_of: NamespaceOf,
    host_allowed: Callable[[str], bool] = loopback_host,
    exports: Exports | None = None,
) -> ASGIApp:
    """The view over the engine `engine_of` gives; each API request sees the namespace its bearer
    token opens (`namespace_of`), on a Host that `host_allowed` accepts. Its downloads of exports,
    for every namespace it serves, are counted in `exports` (by default its own, with the default
    limits)."""

    async def index(request: object) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    app = Starlette(
        routes=[
            Route("/", index),
            *routes(engine_of, exports or Exports()),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ]
    )
    return TokenGuard(app, namespace_of=namespace_of, host_allowed=host_allowed)
