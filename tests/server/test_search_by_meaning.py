"""Search by meaning through the official MCP client, in both protocol eras: the server embeds what
is stored as it runs, search_pages says what matched, and says so when it matched words only."""

import anyio
import pytest
from memvm.engine.config import EngineConfig

from tests.server.conftest import call

pytestmark = pytest.mark.anyio

FACTS = [
    "We adopted a beagle puppy named Pixel last spring.",
    "The quarterly report is due on Friday.",
    "I switched my phone plan to the cheaper one.",
    "The train to the coast leaves at 7:40.",
]


async def test_the_server_embeds_what_is_remembered_and_search_finds_it_by_meaning(connect):
    async with connect() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "by their meaning" in tools["search_pages"].description
        for fact in FACTS:
            await call(client, "remember", content=fact)
        # The server's own embedder gives each page its vector a moment after the write.
        for _ in range(600):
            found = await call(client, "search_pages", query="Do I have any pets?")
            if found["results"]:
                break
            await anyio.sleep(0.1)
        by_words = await call(client, "search_pages", query="quarterly report")
    top = found["results"][0]
    assert top["snippet"].startswith("We adopted a beagle") and top["matched"] == "meaning"
    assert found["note"] is None
    assert by_words["results"][0]["matched"] in {"words", "both"}


async def test_search_lexical_says_so_in_the_description_and_in_each_result(connect):
    async with connect(engine=EngineConfig(semantic_search=False)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        await call(client, "remember", content=FACTS[0])
        found = await call(client, "search_pages", query="beagle")
    assert "search by meaning is off on this server" in tools["search_pages"].description
    assert found["results"][0]["matched"] == "words"
    assert found["note"] == "search by meaning is off (--search lexical)"


async def test_a_missing_model_leaves_search_by_words_and_one_line_without_a_path(connect, tmp_path):
    missing = tmp_path / "nowhere"
    async with connect(engine=EngineConfig(embedding_model=str(missing))) as client:
        await call(client, "remember", content=FACTS[0])
        found = await call(client, "search_pages", query="beagle puppy")
    assert found["results"][0]["matched"] == "words"
    assert found["note"].startswith("search matches words only:") and "\n" not in found["note"]
    assert str(tmp_path) not in found["note"]
