"""What `forget` costs in a large memory, and what a writer beside it waits.

    .venv/bin/python tests/bench/forget_scale.py --pages 100000 [--forgets 5] [--dir DIR]
                                                 [--db-url postgresql://.../EMPTY_DB]

Takes the namespace search_scale.py fills (the same file in DIR, filled first if missing), copies
it, and forgets (on PostgreSQL, fills the empty migrated-or-new database --db-url names, then forgets) `--forgets` of its pages one after another, while another task keeps remembering
notes. Reports each forget's time, the full-text index's size, the largest WAL seen, and the
waits of the writer beside it (its longest is about how long the purge holds the write lock).
Prints figures; nothing is asserted.
"""

import argparse
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import anyio
from measure import summary
from memvm.engine import Engine
from memvm.engine.models.pages import NewPage, PageType
from scale_memvm import NS, fill_bulk
from search_scale import fill
from synthetic import Corpus


def _index_mb(db: Path) -> float:
    with sqlite3.connect(db) as conn:
        (size,) = conn.execute("SELECT sum(length(block)) FROM pages_fts_data").fetchone()
    return float(size) / 2**20


async def _sqlite_copy(pages: int, folder: Path) -> Path:
    source = folder / f"search-{pages}.db"
    await fill(source, pages)
    copy = folder / f"forget-{pages}.db"
    for suffix in ("", "-wal", "-shm"):
        await anyio.Path(f"{copy}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, copy)
    print(f"{pages:,} pages, full-text index {_index_mb(copy):.1f} MiB")
    return copy


async def _postgres_filled(pages: int, url: str) -> str:
    engine = await Engine.open(url)
    try:
        seconds = await fill_bulk(engine, Corpus(), pages)
    finally:
        await engine.close()
    print(f"{pages:,} pages on PostgreSQL, filled in {seconds:.0f} s")
    return url


async def run(pages: int, forgets: int, folder: Path, url: str | None) -> None:
    copy: Path | str = await _postgres_filled(pages, url) if url else await _sqlite_copy(pages, folder)
    engine = await Engine.open(copy)
    waits: list[float] = []
    wal_peak = 0
    done = anyio.Event()

    async def writer() -> None:
        nonlocal wal_peak
        index = 0
        while not done.is_set():
            started = time.perf_counter()
            await engine.session(NS, "beside").remember(
                page=NewPage(
                    content=f"a note written beside the forget, {index}",
                    type=PageType.NOTE,
                    provenance="model",
                )
            )
            waits.append(time.perf_counter() - started)
            wal = anyio.Path(f"{copy}-wal")
            if isinstance(copy, Path) and await wal.exists():
                wal_peak = max(wal_peak, (await wal.stat()).st_size)
            index += 1
            await anyio.sleep(0.01)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(writer)
            for number in range(forgets):
                page_id = f"msg_{1 + number * (pages // max(1, forgets)):06d}"
                started = time.perf_counter()
                result = await engine.session(NS, "agent").forget(page_id=page_id)
                took = time.perf_counter() - started
                print(f"  forget {page_id}: {took:.2f} s, purged={result.purged}")
            done.set()
    finally:
        await engine.close()
    beside = summary(waits)
    # PostgreSQL keeps its write-ahead log to itself: the WAL figure is SQLite's file.
    wal = f"; largest WAL seen {wal_peak / 2**20:.1f} MiB" if isinstance(copy, Path) else ""
    print(
        f"  writer beside: {beside['n']} remembers, p50 {beside['p50_ms']:.1f} ms, p95 {beside['p95_ms']:.1f} ms, "
        f"max {max(waits) * 1000:.0f} ms{wal}"
    )
    if isinstance(copy, Path):
        print(
            f"  after: full-text index {_index_mb(copy):.1f} MiB, file {(await anyio.Path(copy).stat()).st_size / 2**20:.0f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--forgets", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--db-url", help="an empty PostgreSQL database to fill and forget in")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    anyio.run(run, args.pages, args.forgets, args.dir, args.db_url)


if __name__ == "__main__":
    sys.exit(main())
