"""Ingest over MCP while the server embeds, against the same server with search by meaning off.

    .venv/bin/python tests/bench/ingest_meaning.py [--pages 2000] [--rounds 3]

Two `memvm serve` processes over stdio, each on a database of its own: one as installed (it
embeds every page it stores, beside the writes), one with `--search lexical` (no encoder: the
path of a server before search by meaning). The official MCP client ingests the same synthetic
conversation into both, 50 messages a call, the two servers taking turns each round, so that both
see the same machine. Prints each one's pages per second, their ratio, and how long after the last
write the embedding server had every page searchable by meaning.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from e2e import checked, stdio
from mcp import Client
from memvm.engine import Engine, EngineConfig
from memvm.engine.meaning.vector_store import progress
from synthetic import Corpus

BATCH = 50


async def ingest(client: Client, corpus: Corpus, pages: int, session: str) -> float:
    """Seconds to ingest `pages` messages through the client."""
    started = time.perf_counter()
    for start in range(0, pages, BATCH):
        messages = [
            {"role": "user" if (start + i) % 2 == 0 else "assistant", "content": corpus.message()}
            for i in range(min(BATCH, pages - start))
        ]
        await checked(client, "ingest", {"messages": messages, "session": session})
    return time.perf_counter() - started


async def waiting(db: Path) -> int:
    engine = await Engine.open(db, EngineConfig(read_only=True))
    try:
        async with engine.db.read(None) as conn:
            return (await progress(conn, engine.meaning.model_id))[1]
    finally:
        await engine.close()


async def embedded(db: Path, since: float) -> float:
    """Seconds from `since` until no page of `db` waits for its vector (polled)."""
    for _ in range(36_000):  # an hour at most
        if not await waiting(db):
            break
        await anyio.sleep(0.2)
    return time.perf_counter() - since


async def run(pages: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="memvm-ingest-") as folder:
        hybrid_db, lexical_db = Path(folder) / "hybrid.db", Path(folder) / "lexical.db"
        serve = ["-m", "memvm.server", "serve", "--tools", "all", "--db"]
        seconds: dict[str, list[float]] = {"hybrid": [], "lexical": []}
        async with (
            Client(stdio(*serve, str(hybrid_db))) as hybrid,
            Client(stdio(*serve, str(lexical_db), "--search", "lexical")) as lexical,
        ):
            for round_ in range(rounds):
                for name, client in (("hybrid", hybrid), ("lexical", lexical))[
                    :: 1 if round_ % 2 == 0 else -1
                ]:
                    seconds[name].append(await ingest(client, Corpus(seed=round_), pages, f"round-{round_}"))
            written = time.perf_counter()
            caught_up = await embedded(hybrid_db, written)
    rate = {name: pages / statistics.median(values) for name, values in seconds.items()}
    print(f"ingest over MCP (stdio), {pages} pages a round, {rounds} rounds, {BATCH} messages a call")
    print(f"  --search lexical (no encoder):  {rate['lexical']:.0f} pages/s")
    print(f"  as installed (embedding beside): {rate['hybrid']:.0f} pages/s")
    print(f"  slowdown: {rate['lexical'] / rate['hybrid']:.2f}x")
    print(f"  every page searchable by meaning {caught_up:.1f} s after the last write")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    anyio.run(run, options.pages, options.rounds)


if __name__ == "__main__":
    sys.exit(main())
