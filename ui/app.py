"""The view as an ASGI application: the API behind the token guard, and the page and its assets,
which hold no data."""

from pathlib import Path

from memvm.engine import Engine
from memvm.ui.api import routes
from memvm.ui.security import TokenGuard
from starlette.applications import Starlette
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

STATIC = Path(__file__).parent / "static"


def create_app(engine: Engine, *, namespace: str, token: str) -> ASGIApp:
    async def index(request: object) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    app = Starlette(
        routes=[
            Route("/", index),
            *routes(engine, namespace),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ]
    )
    return TokenGuard(app, token=token)
