"""Large namespaces are searched through a graph (HNSW) that keeps up with their pages, on both
backends: the real encoder, the real vectors in the database, the real graph. The size at which
the graph takes over is lowered so that a few pages make a large namespace."""

import threading

import anyio
import numpy as np
import pytest
from memvm.engine.meaning.graph import Graph
from memvm.engine.meaning.model_files import DIMENSIONS, MODEL_ID
from memvm.engine.storage.statements import statement

from tests.conftest import NS, note, user
from tests.engine.meaning.test_search_by_meaning import BEAGLE, DISTRACTORS

pytestmark = pytest.mark.anyio

MORE = [
    "The plumber comes on Thursday morning to fix the kitchen sink.",
    "My sister's wedding is in Lisbon in June.",
    "I prefer window seats on long flights.",
    "The library book on Roman history is due next week.",
    "Our team standup moved to 9:30.",
    "I'm allergic to penicillin.",
]


async def _in_graph(engine, count: int) -> None:
    """Wait until the namespace's graph holds `count` vectors (it is built in the background)."""
    with anyio.fail_after(60):
        while engine.meaning.index.in_graph(NS) != count:  # noqa: ASYNC110 (built on a thread)
            await anyio.sleep(0.02)


async def _large(engine) -> list[tuple[str, str]]:
    """A namespace above the (lowered) size for a graph, every page embedded, its graph built."""
    scope = engine.session(NS, "s")
    await scope.remember(page=note(BEAGLE), key="pet")
    await scope.remember(page=note("My dentist is Dr. Okafor, on Tuesdays."), key="health")
    for text in DISTRACTORS + MORE:
        await scope.remember(page=note(text))
    await engine.embed_waiting()
    engine.meaning.index.approximate_above = 5
    assert engine.meaning.index.in_graph(NS) is None
    exact = [(hit.page_id, hit.matched) for hit in (await scope.search(query="Do I have any pets?")).results]
    await _in_graph(engine, 2 + len(DISTRACTORS) + len(MORE))
    return exact


async def test_a_large_namespace_is_searched_through_its_graph_with_the_same_answers(engine):
    exact = await _large(engine)
    scope = engine.session(NS, "s")
    found = await scope.search(query="Do I have any pets?")
    assert [(hit.page_id, hit.matched) for hit in found.results] == exact
    assert exact[0][0] == "pet"
    assert (await scope.search(query="tooth doctor")).results[0].page_id == "health"


async def test_pages_embedded_after_the_graph_was_built_are_found_and_join_it(engine):
    await _large(engine)
    size = engine.meaning.index.in_graph(NS)
    scope = engine.session(NS, "s")
    await scope.remember(page=note("Our car is a blue Skoda estate."), key="car")
    await engine.embed_waiting()
    # Scored exactly until enough new vectors make the graph grow.
    assert (await scope.search(query="what vehicle do we drive")).results[0].page_id == "car"
    assert engine.meaning.index.in_graph(NS) == size
    engine.meaning.index.grow_from = 1
    await scope.search(query="what vehicle do we drive")
    await _in_graph(engine, size + 1)
    assert (await scope.search(query="what vehicle do we drive")).results[0].page_id == "car"


async def test_forgotten_and_rewritten_pages_leave_the_graph(engine):
    await _large(engine)
    size = engine.meaning.index.in_graph(NS)
    scope = engine.session(NS, "s")
    await scope.forget(page_id="pet")
    await scope.remember(page=note("The parking spot is on level 3, bay 42."), key="health")
    # Never found by what they no longer say, even before the graph has caught up.
    assert "pet" not in [hit.page_id for hit in (await scope.search(query="Do I have any pets?")).results]
    await engine.embed_waiting()
    assert "health" not in [hit.page_id for hit in (await scope.search(query="tooth doctor")).results]
    # The forgotten page's vector and the rewritten page's old one leave the graph; the new one
    # is scored exactly until the graph grows.
    await _in_graph(engine, size - 2)
    assert (await scope.search(query="where is the car parked")).results[0].page_id == "health"
    engine.meaning.index.grow_from = 1
    await scope.search(query="where is the car parked")
    await _in_graph(engine, size - 1)
    assert (await scope.search(query="where is the car parked")).results[0].page_id == "health"
    assert "pet" not in [hit.page_id for hit in (await scope.search(query="Do I have any pets?")).results]


async def test_after_close_searches_score_every_vector(engine):
    await _large(engine)
    engine.meaning.index.close()
    assert engine.meaning.index.in_graph(NS) is None
    found = await engine.session(NS, "s").search(query="Do I have any pets?")
    assert found.results[0].page_id == "pet"


def _clustered(count: int, seed: int) -> np.ndarray:
    generator = np.random.default_rng(seed)
    centres = generator.standard_normal((count // 20, DIMENSIONS)).astype(np.float32)
    vectors = centres[generator.integers(0, len(centres), count)]
    vectors += 0.6 * generator.standard_normal((count, DIMENSIONS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_graph_finds_a_vector_again_from_a_query_near_it():
    vectors = _clustered(6_000, seed=3)
    graph = Graph(threads=2)
    for _ in graph.adding(np.arange(1, 6_001, dtype=np.int64), vectors):
        pass
    generator = np.random.default_rng(4)
    sources = generator.integers(0, 6_000, 100)
    queries = vectors[sources] + 0.02 * generator.standard_normal((100, DIMENSIONS)).astype(np.float32)
    found = sum(
        int(source + 1 in graph.candidates(query / np.linalg.norm(query), 10))
        for source, query in zip(sources, queries, strict=True)
    )
    assert found >= 97


def test_a_graph_grows_a_chunk_at_a_step_and_removed_keys_are_never_candidates():
    vectors = _clustered(3_000, seed=5)
    keys = np.arange(1, 3_001, dtype=np.int64)
    graph = Graph(threads=1)
    steps = graph.adding(keys, vectors)
    next(steps)
    assert 0 < len(graph.keys) < len(keys)
    assert set(graph.candidates(vectors[-1], 50).tolist()) <= set(graph.keys.tolist())
    for _ in steps:
        pass
    assert graph.keys.tolist() == keys.tolist()
    graph.remove(keys[:1_500])
    assert graph.keys.tolist() == keys[1_500:].tolist()
    for vector in vectors[:20]:
        assert set(graph.candidates(vector, 50).tolist()) <= set(keys[1_500:].tolist())


_IDS = statement("test.page ids", "SELECT page_id FROM pages WHERE namespace = :namespace")
_VECTOR = statement(
    "test.page vectors",
    "INSERT INTO page_vectors (page_rowid, namespace, model, vector) "
    "SELECT rowid, namespace, :model, :vector FROM pages WHERE namespace = :namespace AND page_id = :page_id",
)


async def test_a_build_stops_within_a_chunk_once_its_thread_takes_no_more_work(engine):
    """As the interpreter does on exit (it would otherwise wait for a running task to end), and
    as closing the index does: the graph's work is refused and ends between two chunks."""
    scope = engine.session(NS, "s")
    for start in range(0, 3_000, 500):
        await scope.ingest(messages=[user(f"page {n}") for n in range(start, start + 500)])
    async with engine.db.read(NS) as conn:
        ids = [row[0] for row in await conn.all(_IDS, namespace=NS)]
    vectors = _clustered(len(ids), seed=8)
    async with engine.db.write(NS) as conn:
        await conn.executemany(
            _VECTOR,
            [
                {"model": MODEL_ID, "vector": vector.tobytes(), "namespace": NS, "page_id": page_id}
                for page_id, vector in zip(ids, vectors, strict=True)
            ],
        )
    index = engine.meaning.index
    index.approximate_above = 100
    async with engine.db.read(NS) as conn:
        await index.nearest(conn, NS, vectors[0], 10)
    building = [t for t in threading.enumerate() if t.name.startswith("memvm-graph")]
    assert building
    index._background.shutdown(wait=False)
    with anyio.fail_after(60):
        while any(thread.is_alive() for thread in building):  # noqa: ASYNC110 (a thread)
            await anyio.sleep(0.02)
    assert index.in_graph(NS) is None  # never finished
