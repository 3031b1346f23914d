"""Search with meaning against search by words alone, in one large namespace, in the same run.

    .venv/bin/python tests/bench/meaning_scale.py --pages 100000 [--samples 150] [--dir DIR]

Fills a namespace with the scale benchmark's synthetic conversation (as search_scale.py does,
keeping the file in DIR for the next run), gives every page a vector, then asks the same queries
two ways at limit 10: by words alone (search_pages with meaning off), and as search_pages answers
by default (the query embedded by the real encoder, the namespace's vectors scored, both fused).
Prints p50 and p95 of each and their ratio, and the time of the first search with meaning (the
namespace's vectors read into memory).

The pages' vectors are random unit vectors, stored as the embedder stores them: scoring costs the
same whatever their values, and embedding a million synthetic pages for real would take hours
without changing the figure measured here. The query's vector is the real encoder's.
"""

import argparse
import sys
import time
from pathlib import Path

import anyio
import numpy as np
from measure import summary
from memvm.engine import Engine
from memvm.engine.meaning.model_files import DIMENSIONS, MODEL_ID
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
_VECTORS = statement("bench.vectors", "SELECT count(*) FROM page_vectors WHERE namespace = :namespace")


async def give_vectors(engine: Engine) -> None:
    """A random unit vector for every page that has none, in batches."""
    async with engine.db.read(None) as conn:
        have = (await conn.one(_VECTORS, namespace=NS))[0]
        rowids = [row[0] for row in await conn.all(_PAGES, namespace=NS)]
    if have >= len(rowids):
        return
    generator = np.random.default_rng(7)
    for start in range(0, len(rowids), 5_000):
        chunk = rowids[start : start + 5_000]
        vectors = generator.standard_normal((len(chunk), DIMENSIONS)).astype(np.float32)
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


async def run(pages: int, samples: int, folder: Path) -> None:
    db = folder / f"search-{pages}.db"
    await fill(db, pages)
    engine = await Engine.open(db)
    try:
        await give_vectors(engine)
        queries = _queries(samples)
        await engine.meaning.encoder()  # loaded once per process, before any search is timed
        first = await with_meaning(engine, queries[0])
        for query in queries[:5]:  # warm what the first searches fill
            await by_words(engine, query)
            await with_meaning(engine, query)
        # Interleaved, so that both see the same machine.
        words, meaning = [], []
        for query in queries:
            words.append(await by_words(engine, query))
            meaning.append(await with_meaning(engine, query))
    finally:
        await engine.close()
    lexical, fused = summary(words), summary(meaning)
    print(f"{pages:,} pages in one namespace, {samples} searches at limit 10")
    print(f"  by words alone:      p50 {lexical['p50_ms']:.1f} ms  p95 {lexical['p95_ms']:.1f} ms")
    print(f"  words and meaning:   p50 {fused['p50_ms']:.1f} ms  p95 {fused['p95_ms']:.1f} ms")
    print(f"  p95 ratio:           {fused['p95_ms'] / lexical['p95_ms']:.2f}")
    print(f"  first search with meaning (vectors read into memory): {first * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--samples", type=int, default=150)
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / "out")
    options = parser.parse_args()
    options.dir.mkdir(parents=True, exist_ok=True)
    anyio.run(run, options.pages, options.samples, options.dir)


if __name__ == "__main__":
    sys.exit(main())
