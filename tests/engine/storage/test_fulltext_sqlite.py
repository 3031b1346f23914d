"""Term frequencies counted in a namespace's own text when other tenants hold a term in bulk."""

import pytest
from memvm.engine.models.pages import Role
from memvm.engine.models.writes import IngestMessage
from memvm.engine.storage import fulltext_sqlite as postings

from tests.conftest import note

# About SQLite itself: its file, its pragmas, its migrations and its FTS5 index.
pytestmark = [pytest.mark.anyio, pytest.mark.sqlite_only]

QUERIES = ["house", "lake house", "café houses", "coffee-order", "Maria's house garden", "blue"]


async def _scores(engine, namespace: str) -> dict[str, list[tuple[str, float]]]:
    found = {}
    for query in QUERIES:
        result = await engine.session(namespace, "s").search(query=query, limit=10)
        found[query] = [(hit.page_id, hit.score) for hit in result.results]
    return found


async def test_counting_in_the_namespaces_own_text_gives_the_scores_counting_occurrences_gives(
    engine, monkeypatch
):
    texts = [
        "A small house by the lake; the house's roof is blue.",
        "Houses, housing and a house: the café near the lake house serves coffee.",
        "The garden of Maria's house has a blue gate. House house house.",
        "Nothing to see here but a lake.",
    ]
    for text in texts:
        await engine.session("bob", "s").remember(page=note(text))
    await engine.session("bob", "s").remember(page=note("Oat milk, no sugar."), key="coffee-order")
    await engine.session("bob", "s").ingest(
        messages=[IngestMessage(role=Role.USER, content="Is the house by the lake blue?", name="Maria")]
    )
    # Another tenant holds the words in bulk: far more occurrences than bob has characters.
    for n in range(2):
        await engine.session("alice", "s").remember(page=note("house lake blue garden " * 3_000 + str(n)))
    counted = await _scores(engine, "bob")

    in_text = []
    original = engine.stemmer.frequencies

    def spy(*args, **kwargs):
        in_text.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(engine.stemmer, "frequencies", spy)
    monkeypatch.setattr(postings, "FEW_OCCURRENCES", 100)
    assert await _scores(engine, "bob") == counted
    assert in_text, "bob's searches never counted in his own text"
    assert all(hits for query, hits in counted.items())
