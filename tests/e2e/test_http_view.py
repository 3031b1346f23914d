"""The browser view beside `memvm serve` over HTTP: each bearer token of the tokens file sees its
own namespace at /ui/, through the real server process and a real HTTP client."""

import anyio
import httpx2
import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.models.pages import NewPage, PageType

from tests.e2e.test_http import ALICE, BOB, http_server

# On SQLite: the view's reads are checked on both backends in process (tests/ui/).
pytestmark = [pytest.mark.slow, pytest.mark.above_storage]


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_each_token_sees_its_own_namespace_in_the_view(db_url, tokens, transport):
    async def remember() -> None:
        engine = await Engine.open(db_url, EngineConfig())
        try:
            for namespace, text in (
                ("alice", "Alice deploys through argo."),
                ("bob", "Bob deploys through flux."),
            ):
                note = NewPage(content=text, type=PageType.NOTE, provenance="user")
                await engine.session(namespace, "s1").remember(page=note, key=namespace)
        finally:
            await engine.close()

    anyio.run(remember)
    with http_server(db_url, tokens, transport=transport) as url:
        base = url.rsplit("/", 1)[0]
        with httpx2.Client(base_url=base, timeout=30) as browser:
            assert browser.get("/ui").headers["location"] == "/ui/"
            page = browser.get("/ui/")
            assert page.status_code == 200 and '<script src="static/app.js"' in page.text
            assert browser.get("/ui/static/app.js").status_code == 200
            assert browser.get("/ui/api/overview").status_code == 401
            assert (
                browser.get("/ui/api/overview", headers={"authorization": "Bearer nope"}).status_code == 401
            )

            def pages(token: str) -> list[str]:
                found = browser.get("/ui/api/pages", headers={"authorization": f"Bearer {token}"})
                assert found.status_code == 200
                return [row["abstract"] for row in found.json()["pages"]]

            assert pages(ALICE) == ["Alice deploys through argo."]
            assert pages(BOB) == ["Bob deploys through flux."]
            foreign = browser.get("/ui/api/pages/bob", headers={"authorization": f"Bearer {ALICE}"})
            assert foreign.status_code == 404
            rebound = browser.get(
                "/ui/api/overview", headers={"authorization": f"Bearer {ALICE}", "host": "evil.example"}
            )
            assert rebound.status_code == 400
