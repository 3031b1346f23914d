"""Search with meaning against search by words alone, in one large namespace, in the same run.

    .venv/bin/python tests/bench/meaning_scale.py --pages 100000 [--samples 150] [--dir DIR] [--graph-above N]
        [--bases N]

Fills a namespace with the scale benchmark's synthetic conversation (as search_scale.py does,
keeping the file in DIR for the next run), gives every page a vector, then asks the same queries
two ways at limit 10: by words alone (search_pages with meaning off), and as search_pages answers
by default (the query embedded by the real encoder, the namespace's vectors scored, both fused).
Prints p50 and p95 of each and their ratio, and the time of the first search with meaning (the
namespace's vectors read into memory).

Above 100,000 vectors a namespace is searched through a graph (engine/meaning/graph.py), built in
the background after the first search: the run waits for it (and prints how long it took), then
asks the queries a third way, scoring every vector exactly, as the baseline the graph replaces.
It prints the process's peak resident memory last.

Embedding a million synthetic pages for real would take hours, so each page's vector is made near
real ones: the real encoder embeds up to 2,000 of the namespace's page texts (`--bases`), and each
page gets one of those vectors moved part of the way toward another, plus a little noise. Exact
scoring costs the same whatever the values; a graph's recall depends on them, and vectors drawn at
random in 384 dimensions (no structure at all) are far harder for any graph than text's are. The
query's vector is the real encoder's. The graph's recall is measured on the same queries: the
share of the exact 10 nearest that the search through the graph also returned.
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import anyio
import numpy as np
from measure import summary
from memvm.engine import Engine
from memvm.engine.meaning.model_files import DIMENSIONS, MODEL_ID
from memvm.engine.meaning.vector_index import APPROXIMATE_ABOVE
from memvm.engine.paging.search import WORDS_ONLY, search_pages
from memvm.engine.storage.statements import statement
from scale_memvm import NS
from search_scale import _queries, fill

_PAGES = statement("bench.page rowids", "SELECT rowid FROM pages WHERE namespace = :namespace ORDER BY rowid")
_VECTOR = statement(
    "bench.vector",
    "INSERT INTO page_vectors (page_rowid, namespace, model, vector) VALUES (:rowid, :namespace, :model, :vector)",
)
_DONE = statement("bench.embedded", "DELETE FROM pages_to_embed WHERE namespace = :namespace")
_VECTOR_OF = statement("bench.vector of", "SELECT vector FROM page_vectors WHERE page_rowid = :rowid")
_VECTORS = statement("bench.vectors", "SELECT count(*) FROM page_vectors WHERE namespace = :namespace")


_TEXTS = statement(
    "bench.page texts",
    """
SELECT DISTINCT t.content FROM page_texts t JOIN pages p ON p.rowid = t.rowid
WHERE p.namespace = :namespace LIMIT :count""",
)


async def give_vectors(engine: Engine, bases: int) -> None:
    """A vector near real ones for every page (see above), in batches, unless every page has one."""
    async with engine.db.read(None) as conn:
        have = (await conn.one(_VECTORS, namespace=NS))[0]
        rowids = [row[0] for row in await conn.all(_PAGES, namespace=NS)]
        texts = [row[0] for row in await conn.all(_TEXTS, namespace=NS, count=bases)]
    if have >= len(rowids):
        return
    embedded = [await engine.meaning.embed(texts[at : at + 32]) for at in range(0, len(texts), 32)]
    assert all(batch is not None for batch in embedded), engine.meaning.why_off
    near = np.concatenate(embedded)
    generator = np.random.default_rng(7)
    for start in range(0, len(rowids), 5_000):
        chunk = rowids[start : start + 5_000]
        toward = generator.uniform(0.0, 0.5, (len(chunk), 1)).astype(np.float32)
        vectors = (1 - toward) * near[generator.integers(0, len(near), len(chunk))]
        vectors += toward * near[generator.integers(0, len(near), len(chunk))]
        vectors += 0.02 * generator.standard_normal((len(chunk), DIMENSIONS)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        async with engine.db.write(NS) as conn:
            await conn.executemany(
                _VECTOR,
                [
                    {"rowid": rowid, "namespace": NS, "model": MODEL_ID, "vector": vector.tobytes()}
                    for rowid, vector in zip(chunk, vectors, strict=True)
                ],
            )
    async with engine.db.write(NS) as conn:
        await conn.execute(_DONE, namespace=NS)


async def by_words(engine: Engine, query: str) -> float:
    started = time.perf_counter()
    async with engine.db.read(NS) as conn:
        await search_pages(
            conn,
            namespace=NS,
            viewer_session="agent",
            query=query,
            limit=10,
            stemmer=engine.stemmer,
            tuning=engine.config.search,
            meaning=WORDS_ONLY,
        )
    return time.perf_counter() - started


async def with_meaning(engine: Engine, query: str) -> float:
    started = time.perf_counter()
    await engine.session(NS, "agent").search(query=query, limit=10)
    return time.perf_counter() - started


async def run(pages: int, samples: int, folder: Path, graph_above: int, bases: int) -> None:
    db = folder / f"search-{pages}.db"
    await fill(db, pages)
    engine = await Engine.open(db)
    index = engine.meaning.index
    index.approximate_above = graph_above
    try:
        await give_vectors(engine, bases)
        queries = _queries(samples)
        await engine.meaning.encoder()  # loaded once per process, before any search is timed
        first = await with_meaning(engine, queries[0])
        built = await _graph_built(engine)
        words, meaning = await _timed(engine, queries)
        if built is not None:
            recall, shortfall = await _recall(engine, queries, graph_above)
            index.approximate_above = 10**12  # the same copy, every vector scored
            _, exact = await _timed(engine, queries)
            index.approximate_above = graph_above
    finally:
        await engine.close()
    lexical, fused = summary(words), summary(meaning)
    how = "through the graph" if built is not None else "every vector scored"
    print(f"{pages:,} pages in one namespace, {samples} searches at limit 10")
    print(f"  by words alone:      p50 {lexical['p50_ms']:.1f} ms  p95 {lexical['p95_ms']:.1f} ms")
    print(f"  words and meaning:   p50 {fused['p50_ms']:.1f} ms  p95 {fused['p95_ms']:.1f} ms  ({how})")
    print(f"  p95 ratio:           {fused['p95_ms'] / lexical['p95_ms']:.2f}")
    print(f"  first search with meaning (vectors read into memory): {first * 1000:.0f} ms")
    if built is not None:
        baseline = summary(exact)
        print(f"  graph built in the background in {built:.0f} s")
        print(
            f"  the graph's recall: {recall:.3f} of the exact 10 nearest (mean cosine {shortfall:.4f} lower)"
        )
        print(
            f"  baseline, every vector scored: p50 {baseline['p50_ms']:.1f} ms  p95 {baseline['p95_ms']:.1f} ms"
            f"  (p95 ratio {baseline['p95_ms'] / lexical['p95_ms']:.2f})"
        )
    print(f"  peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


async def _graph_built(engine: Engine) -> float | None:
    """Wait for the namespace's graph, when it is large enough for one: seconds it took."""
    if engine.meaning.index.approximate_above >= await _vectors(engine):
        return None
    started = time.perf_counter()
    while engine.meaning.index.in_graph(NS) is None:  # noqa: ASYNC110 (built on a thread: nothing to await)
        await anyio.sleep(1)
    return time.perf_counter() - started


async def _vectors(engine: Engine) -> int:
    async with engine.db.read(None) as conn:
        return int((await conn.one(_VECTORS, namespace=NS))[0])


async def _timed(engine: Engine, queries: list[str]) -> tuple[list[float], list[float]]:
    for query in queries[:5]:  # warm what the first searches fill
        await by_words(engine, query)
        await with_meaning(engine, query)
    # Interleaved, so that both see the same machine.
    words, meaning = [], []
    for query in queries:
        words.append(await by_words(engine, query))
        meaning.append(await with_meaning(engine, query))
    return words, meaning


async def _recall(engine: Engine, queries: list[str], graph_above: int) -> tuple[float, float]:
    """The share of the exact 10 nearest each query that the search through the graph returned,
    and how much lower the mean cosine of what it returned was."""
    index, shares, shortfalls = engine.meaning.index, [], []
    async with engine.db.read(NS) as conn:
        for query in queries:
            vector = await engine.meaning.query_vector(query)
            assert vector is not None
            index.approximate_above = graph_above
            through_graph = await index.nearest(conn, NS, vector, 10)
            index.approximate_above = 10**12
            exact = await index.nearest(conn, NS, vector, 10)
            shares.append(len(through_graph.keys() & exact.keys()) / len(exact))
            shortfalls.append(np.mean(list(exact.values())) - np.mean(list(through_graph.values())))
    index.approximate_above = graph_above
    return sum(shares) / len(shares), float(np.mean(shortfalls))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--samples", type=int, default=150)
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument(
        "--graph-above",
        type=int,
        default=APPROXIMATE_ABOVE,
        help=f"vectors in a namespace above which it is searched through a graph (memvm's: {APPROXIMATE_ABOVE:,})",
    )
    parser.add_argument(
        "--bases",
        type=int,
        default=2_000,
        help="page texts embedded for real, which every vector is made near",
    )
    options = parser.parse_args()
    options.dir.mkdir(parents=True, exist_ok=True)
    anyio.run(run, options.pages, options.samples, options.dir, options.graph_above, options.bases)


if __name__ == "__main__":
    sys.exit(main())
