"""Large pages: a manifest over one tenant's huge pages, and another tenant's search meanwhile.

Run on purpose: `.venv/bin/python tests/bench/large_pages.py [pages] [chars_each]` (default 400
pages of 400,000 characters). Prints one line for this memvm, where long texts live in their own
table, and one for the named baseline `schema6`: the same pages in the layout of schema 6 (texts
inside the page rows), read by that schema's manifest query. The other tenant's reads run
beside the manifest on another connection, as the engine's read pool does.
"""

import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.models.pages import NewPage, PageType
from memvm.engine.storage.migrations import MIGRATIONS, ledger_sql

# Schema 6's manifest query: the recent window read whole rows.
_OLD_MANIFEST = """
SELECT p.page_id, p.type, p.role, p.session, p.reference, p.importance,
       p.tokens_full, p.tokens_reduced, p.tokens_abstract, p.tokens_reference
FROM (
    SELECT * FROM pages WHERE namespace = ? ORDER BY last_access DESC LIMIT 500
) AS p
WHERE NOT EXISTS (
    SELECT 1 FROM working_set w WHERE w.namespace = p.namespace AND w.session = 's' AND w.page_rowid = p.rowid
)
ORDER BY p.pinned DESC, p.importance + 0.05 * min(p.access_count, 10) DESC, p.last_access DESC, p.rowid DESC
LIMIT 40"""
_OLD_OTHER = "SELECT rowid, tokens_full, search_chars FROM pages WHERE namespace = 'other'"


def text(chars: int) -> str:
    return ("The quarterly tool log line reads status ok and moves on. " * (chars // 58 + 1))[:chars]


def baseline(path: Path, pages: int, chars: int) -> tuple[float, float]:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(ledger_sql("sqlite"))
    for migration in MIGRATIONS["sqlite"][:6]:
        for statement in migration.statements:
            conn.execute(statement)
    conn.execute("BEGIN")
    for namespace in ("big", "other"):
        conn.execute("INSERT INTO sessions VALUES (?, 's', 0, 0, 0, 0, 0)", (namespace,))
    body = text(chars)
    rows = [("big", f"p{n}", body) for n in range(pages)] + [
        ("other", f"o{n}", "walrus note") for n in range(50)
    ]
    conn.executemany(
        """INSERT INTO pages (namespace, page_id, session, type, modality, importance, provenance, created_at,
               last_access, turn, metadata, content, reduced, abstract, reference, tokens_full, tokens_reduced,
               tokens_abstract, tokens_reference)
           VALUES (?, ?, 's', 'note', 'text', 0.5, 'model', 1, 1, 1, '{}', ?, '', '', '', 1, 1, 1, 1)""",
        rows,
    )
    conn.execute("COMMIT")
    other = sqlite3.connect(path, check_same_thread=False)
    return _race(
        lambda: conn.execute(_OLD_MANIFEST, ("big",)).fetchall(), lambda: other.execute(_OLD_OTHER).fetchall()
    )


def _race(manifest, search) -> tuple[float, float]:
    timings: list[float] = []
    done = threading.Event()

    def searching() -> None:
        while not done.is_set():
            started = time.perf_counter()
            search()
            timings.append(time.perf_counter() - started)

    thread = threading.Thread(target=searching)
    thread.start()
    started = time.perf_counter()
    manifest()
    took = time.perf_counter() - started
    done.set()
    thread.join()
    return took, statistics.median(timings) * 1000


async def current(path: Path, pages: int, chars: int) -> tuple[float, float]:
    engine = await Engine.open(path, EngineConfig(max_page_tokens=10_000_000))
    body = text(chars)
    for n in range(pages):
        await engine.session("big", "s").remember(
            page=NewPage(content=f"{n} {body}", type=PageType.NOTE, provenance="model")
        )
    for n in range(50):
        await engine.session("other", "s").remember(
            page=NewPage(content=f"walrus note {n}", type=PageType.NOTE, provenance="model")
        )
    timings: list[float] = []
    took = 0.0
    done = anyio.Event()

    async def manifest() -> None:
        nonlocal took
        started = time.perf_counter()
        await engine.session("big", "s").memory_map()
        took = time.perf_counter() - started
        done.set()

    async def searching() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await engine.session("other", "s").search(query="walrus")
            timings.append(time.perf_counter() - started)

    async with anyio.create_task_group() as group:
        group.start_soon(searching)
        group.start_soon(manifest)
    await engine.close()
    return took, statistics.median(timings) * 1000


def main() -> None:
    pages = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    chars = int(sys.argv[2]) if len(sys.argv) > 2 else 400_000
    with tempfile.TemporaryDirectory() as folder:
        old_s, old_ms = baseline(Path(folder) / "schema6.db", pages, chars)
        new_s, new_ms = anyio.run(current, Path(folder) / "now.db", pages, chars)
    for name, (manifest_s, other_ms) in (("memvm", (new_s, new_ms)), ("schema6", (old_s, old_ms))):
        print(
            f"large_pages[{name}]: pages={pages} chars_each={chars} manifest_s={manifest_s:.3f} other_search_p50_ms={other_ms:.1f}"
        )
    print(json.dumps({"speedup_manifest": round(old_s / max(new_s, 1e-6), 1)}))


if __name__ == "__main__":
    main()
