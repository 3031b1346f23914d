"""Procedural hints over a million logged calls: how long one get_procedural_hints takes.

Run on purpose: `.venv/bin/python tests/bench/bench_procedures.py [calls]`. The log is filled with
the recorder's own SQL statements in bulk (the per-call path would take an hour for a million
calls); the last 2,000 calls go through `record_tool_outcome` itself, fixes and all. The baseline,
in the same run, computes the same per-tool figures from the log with GROUP BY: what hints would
cost without the running aggregates.
"""

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from memvm.engine import Engine
from memvm.engine.guards.literals import call_hash, canonical_json
from memvm.engine.models import Outcome, ToolOutcome
from memvm.engine.procedures import outcomes
from memvm.resources.procedural import render_hints

TOOLS = [f"tool_{i:02d}" for i in range(40)]
ERRORS = ["timeout after <n>s", "invalid date <q>", "user <n> not found", "rate limited", "BadIban"]
NS = "bench"
BATCH = 20_000


async def fill(engine: Engine, calls: int) -> None:
    rng = random.Random(7)
    now = time.time()
    async with engine.db.write() as conn:
        await conn.execute(
            "INSERT INTO sessions (namespace, session, turn, faults_this_turn, turn_started_at, last_call_at, created_at) "
            "VALUES (?, 'bulk', 0, 0, ?, ?, ?)",
            (NS, now, now, now),
        )
    for start in range(0, calls, BATCH):
        rows, stats, errors, values = [], [], [], []
        for index in range(start, min(calls, start + BATCH)):
            tool = rng.choice(TOOLS)
            args = {"id": rng.randrange(10_000), "mode": rng.choice(["fast", "safe", "full"])}
            failed = rng.random() < 0.2
            signature = rng.choice(ERRORS) if failed else None
            duration = rng.uniform(5, 900)
            rows.append(
                (
                    NS,
                    "bulk",
                    index // 50,
                    tool,
                    canonical_json(args),
                    call_hash(tool, args),
                    "failure" if failed else "success",
                    signature,
                    None,
                    duration,
                    None,
                    None,
                    now,
                )
            )
            stats.append((NS, tool, int(not failed), duration, now, index + 1))
            if failed:
                errors.append((NS, tool, signature, "example", now, index + 1))
            else:
                values.append((NS, tool, "", "mode", json.dumps(args["mode"]), now, index + 1))
        async with engine.db.write() as conn:
            await conn.executemany(outcomes._INSERT_CALL.replace("RETURNING call_id", ""), rows)
            await conn.executemany(outcomes._UPSERT_STATS, stats)
            await conn.executemany(outcomes._UPSERT_ERROR, errors)
            await conn.executemany(outcomes._UPSERT_VALUE, values)


async def record_tail(engine: Engine, calls: int) -> None:
    rng = random.Random(11)
    for index in range(calls):
        tool = rng.choice(TOOLS[:5])
        failed = index % 4 == 0
        call = ToolOutcome(
            tool=tool,
            args={"date": f"{index % 28 + 1}/05" if failed else f"2026-05-{index % 28 + 1:02d}"},
            outcome=Outcome.FAILURE if failed else Outcome.SUCCESS,
            error_message=f"invalid date '{index}/05'" if failed else None,
            duration_ms=rng.uniform(5, 900),
        )
        await engine.record_tool_outcome(namespace=NS, session="live", call=call)


async def timed(runs: int, action) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await action()
        times.append((time.perf_counter() - start) * 1000)
    return times


def report(name: str, times: list[float]) -> None:
    ordered = sorted(times)
    print(
        f"{name:<44} median {statistics.median(ordered):8.2f} ms   p95 {ordered[int(len(ordered) * 0.95) - 1]:8.2f} ms"
    )


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        engine = await Engine.open(Path(scratch) / "bench.db")
        try:
            started = time.perf_counter()
            await fill(engine, calls - 2_000)
            await record_tail(engine, 2_000)
            async with engine.db.read() as conn:
                (logged,) = await conn.one("SELECT count(*) FROM tool_calls")
            print(f"logged calls: {logged:,} (filled in {time.perf_counter() - started:.0f} s)")

            async def hints(**ask) -> None:
                knowledge = await engine.procedural_knowledge(namespace=NS, **ask)
                render_hints(knowledge, engine.counter, 600)

            async def baseline() -> None:
                async with engine.db.read() as conn:
                    await baseline_queries(conn)

            async def baseline_queries(conn) -> None:
                await conn.all(
                    "SELECT tool, count(*), avg(outcome = 'success'), avg(duration_ms) FROM tool_calls "
                    "WHERE namespace = ? AND tool IN (?, ?, ?, ?, ?) GROUP BY tool",
                    (NS, *TOOLS[:5]),
                )
                await conn.all(
                    "SELECT tool, error_signature, count(*) AS n FROM tool_calls WHERE namespace = ? "
                    "AND error_signature IS NOT NULL GROUP BY tool, error_signature ORDER BY n DESC LIMIT 15",
                    (NS,),
                )

            report("get_procedural_hints (latest tools)", await timed(50, hints))
            report("get_procedural_hints (tools=5 named)", await timed(50, lambda: hints(tools=TOOLS[:5])))
            report(
                "get_procedural_hints (error_type)",
                await timed(50, lambda: hints(error_type="invalid date '1/1'")),
            )
            report("baseline: the same figures from the log (GROUP BY)", await timed(5, baseline))
        finally:
            await engine.close()


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
