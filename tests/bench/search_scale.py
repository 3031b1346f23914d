"""search_pages in one large namespace: time, and agreement of its top 10 with exact ranking.

    .venv/bin/python tests/bench/search_scale.py --pages 1000000 [--samples 150] [--dir DIR]
                                                 [--tiers EXACT_PAGES,POSTINGS,CANDIDATES]

Fills a namespace with the scale benchmark's synthetic conversation (through write_history, as
`scale_memvm.py --bulk`), keeping the file in DIR (default tests/bench/out) for the next run, then
searches it with the scale benchmark's queries at limit 10. Search in a namespace of more than
tiers.EXACT_PAGES pages reads a bounded part of the index (engine/paging/tiers.py); the same queries
are then ranked on every occurrence of every term, which is exact and slow, and the share of the
exact top 10 that the bounded search also returned is the agreement: with the default re-scoring,
and with BM25 alone (neighbour and session bonuses off, which reach pages the bounded search did
not score). `--tiers` sets the three caps of tiers.py for the run: smaller ones measure the
bounded search on a small namespace. Prints figures; nothing is asserted.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
from measure import summary
from memvm.engine import Engine
from memvm.engine.config import SearchTuning
from memvm.engine.paging import tiers
from memvm.engine.paging.search import DEFAULT_TUNING as DEFAULT
from memvm.engine.paging.search import search_pages
from scale_memvm import NS, fill_bulk
from synthetic import Corpus


def _queries(samples: int) -> list[str]:
    """Queries drawn as the scale benchmark draws them, from a seed of their own."""
    corpus = Corpus(seed=3)
    return [corpus.query() for _ in range(samples)]


PLAIN = SearchTuning(neighbour_weight=0.0, session_weight=0.0)
# The caps of engine/paging/tiers.py, which search reads at each call.
TIERS = ("EXACT_PAGES", "POSTINGS", "CANDIDATES")


def set_tiers(text: str) -> None:
    for name, value in zip(TIERS, (int(part) for part in text.split(",")), strict=True):
        if not hasattr(tiers, name):
            raise SystemExit(f"engine/paging/tiers.py has no {name}: update TIERS in {__file__}")
        setattr(tiers, name, value)


async def ranked(engine: Engine, query: str, tuning: SearchTuning) -> tuple[list[str], float]:
    started = time.perf_counter()
    async with engine.db.read(None) as conn:
        found = await search_pages(
            conn,
            namespace=NS,
            viewer_session="agent",
            query=query,
            limit=10,
            stemmer=engine.stemmer,
            tuning=tuning,
        )
    return [hit.page_id for hit in found.results], time.perf_counter() - started


async def fill(db: Path, pages: int) -> None:
    """The namespace, filled once and kept beside a marker that says it is whole."""
    filled = db.with_suffix(".filled")
    if filled.exists():
        return
    await anyio.Path(db).unlink(missing_ok=True)
    engine = await Engine.open(db)
    try:
        seconds = await fill_bulk(engine, Corpus(), pages)
    finally:
        await engine.close()
    filled.write_text(f"{seconds:.0f} s\n")


def agreement(fast: list[tuple[list[str], float]], exact: list[tuple[list[str], float]]) -> str:
    shares = [
        len(set(found) & set(best)) / len(best) if best else 1.0
        for (found, _), (best, _) in zip(fast, exact, strict=True)
    ]
    return f"mean {statistics.fmean(shares):.3f}, searches at 90% or more {sum(a >= 0.9 for a in shares) / len(shares):.0%}"


async def run(pages: int, samples: int, folder: Path) -> None:
    db = folder / f"search-{pages}.db"
    await fill(db, pages)
    engine = await Engine.open(db)
    queries = _queries(samples)
    found: dict[str, list[tuple[list[str], float]]] = {}
    try:
        for query in queries[:5]:  # warm the caches the first searches fill
            await ranked(engine, query, DEFAULT)
        for name, tuning in (("default", DEFAULT), ("plain", PLAIN)):
            found[name] = [await ranked(engine, query, tuning) for query in queries]
        bounded, tiers.EXACT_PAGES = tiers.EXACT_PAGES, 10**12
        try:
            for name, tuning in (("exact default", DEFAULT), ("exact plain", PLAIN)):
                found[name] = [await ranked(engine, query, tuning) for query in queries]
        finally:
            tiers.EXACT_PAGES = bounded
    finally:
        await engine.close()
    timing, exact_timing = (
        summary([s for _, s in found["default"]]),
        summary([s for _, s in found["exact default"]]),
    )
    caps = ", ".join(f"{name} {getattr(tiers, name):,}" for name in TIERS)
    print(f"{pages:,} pages, {samples} searches at limit 10 ({caps})")
    print(f"  search_pages:          p50 {timing['p50_ms']:.1f} ms  p95 {timing['p95_ms']:.1f} ms")
    print(
        f"  exact ranking:         p50 {exact_timing['p50_ms']:.1f} ms  p95 {exact_timing['p95_ms']:.1f} ms"
    )
    print(f"  top-10 agreement:      {agreement(found['default'], found['exact default'])}")
    print(f"  the same, BM25 alone:  {agreement(found['plain'], found['exact plain'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--samples", type=int, default=150)
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument(
        "--tiers",
        help="EXACT_PAGES,POSTINGS,CANDIDATES for this run (default: engine/paging/tiers.py's own)",
    )
    options = parser.parse_args()
    if options.tiers:
        set_tiers(options.tiers)
    options.dir.mkdir(parents=True, exist_ok=True)
    anyio.run(run, options.pages, options.samples, options.dir)


if __name__ == "__main__":
    sys.exit(main())
