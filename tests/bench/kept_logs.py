"""What a full tool call log costs a tenant: record_tool_outcome in a namespace whose log is at its
bound (each write may trim the oldest calls and what they taught) against the same calls in an
empty namespace, in the same run.

    .venv/bin/python tests/bench/kept_logs.py [--backend sqlite|postgresql] [--rows 100000]
                                              [--calls 512] [--bound N] [--db-url postgresql://...]

The full namespace gets `--rows` logged calls (and as many mutation-log entries) in bulk, then
both namespaces log `--calls` calls through the engine, one at a time, alternating. `--bound` sets
the kept rows of the tool call log (engine/kept_logs.py; its own value by default), so that a
small run trims too. Prints one line of figures. On PostgreSQL the run gets a fresh database on
the server --db-url names, else on a throwaway server started on loopback (tests/postgres_server.py).
"""

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from fresh_postgres import Databases  # noqa: E402
from memvm.engine import Engine, kept_logs  # noqa: E402
from memvm.engine.models.procedures import Outcome, ToolOutcome  # noqa: E402

from tests.placeholders import query  # noqa: E402

FULL, EMPTY = "full", "empty"

# A log already at its size, written in one statement on either backend.
_FILL_CALLS = query("""
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :rows)
INSERT INTO tool_calls (namespace, call_id, session, turn, tool, args, call_hash, outcome, at)
SELECT :namespace, i, 's', 1, 'tool_' || (i % 40), '{"id": ' || i || '}', 'h' || i, 'success', i FROM n
""")
_FILL_LOG = query("""
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :rows)
INSERT INTO mutation_log (namespace, session, page_id, turn, kind, actor, cause, at)
SELECT :namespace, 's', 'msg_' || i, 1, 'map', 'model', 'search', i FROM n
""")
_COUNT = query("SELECT count(*) AS n FROM tool_calls WHERE namespace = :namespace")


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


async def run(rows: int, calls: int, bound: int | None, db_url: str | None) -> None:
    if bound is not None:
        log = replace(kept_logs.KEPT_LOGS["tool_calls"], rows=bound)
        kept_logs.KEPT_LOGS["tool_calls"] = log
    bound = kept_logs.KEPT_LOGS["tool_calls"].rows
    with tempfile.TemporaryDirectory() as folder:
        engine = await Engine.open(db_url or Path(folder) / "memvm.db")
        try:
            for namespace in (FULL, EMPTY):
                await engine.session(namespace, "s").begin_turn()
            warm = ToolOutcome(tool="warm", args={}, outcome=Outcome.SUCCESS)
            await engine.session("warm", "s").record_tool_outcome(call=warm)  # first-call costs
            started = time.perf_counter()
            async with engine.db.write(FULL) as conn:
                await conn.execute(_FILL_CALLS, rows=rows, namespace=FULL)
                await conn.execute(_FILL_LOG, rows=rows, namespace=FULL)
            filled_s = time.perf_counter() - started
            times: dict[str, list[float]] = {FULL: [], EMPTY: []}
            for index in range(calls):
                for namespace in (FULL, EMPTY):
                    call = ToolOutcome(tool=f"tool_{index % 40}", args={"id": index}, outcome=Outcome.SUCCESS)
                    start = time.perf_counter()
                    await engine.session(namespace, "s").record_tool_outcome(call=call)
                    times[namespace].append((time.perf_counter() - start) * 1000)
            async with engine.db.read(FULL) as conn:
                kept = await conn.one(_COUNT, namespace=FULL)
        finally:
            await engine.close()
    assert kept is not None
    backend = "postgresql" if db_url else "sqlite"
    full, empty = times[FULL], times[EMPTY]
    print(
        f"kept_logs: backend={backend} rows={rows} bound={bound} calls={calls} filled_s={filled_s:.2f} "
        f"full p50_ms={statistics.median(full):.2f} p95_ms={percentile(full, 0.95):.2f} "
        f"max_ms={max(full):.2f} empty p50_ms={statistics.median(empty):.2f} "
        f"p95_ms={percentile(empty, 0.95):.2f} max_ms={max(empty):.2f} kept_calls={kept['n']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=512)
    parser.add_argument("--bound", type=int, default=None)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--db-url", default=None)
    args = parser.parse_args()
    if args.backend == "sqlite":
        anyio.run(run, args.rows, args.calls, args.bound, None)
        return
    databases = Databases(args.db_url)
    try:
        anyio.run(run, args.rows, args.calls, args.bound, databases.fresh())
    finally:
        databases.close()


if __name__ == "__main__":
    main()
