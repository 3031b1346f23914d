"""Procedural hints over a million logged calls: how long one get_procedural_hints takes.

Run on purpose: `.venv/bin/python tests/bench/bench_procedures.py [calls] [--tail N]`. Every call
is logged through `record_tool_outcome`, as a host logs it: calls of 40 tools in sessions of 50,
one in five failing, then the last `--tail` (2,000) on five tools, every fourth a failure that the
next call fixes. Logging a million calls one by one takes a while (a quarter of an hour on a
2-core machine). The baseline, in the same run, computes the same per-tool figures from the log
with GROUP BY: what hints would cost without the running aggregates.
"""

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.config import Synchronous
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.resources.procedural import render_hints

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.placeholders import query

# The baseline: the same answers from a GROUP BY over the whole log.
BASELINE_STATS = query(
    "SELECT tool, count(*), avg(outcome = 'success'), avg(duration_ms) FROM tool_calls "
    "WHERE namespace = :namespace AND tool IN (:t0, :t1, :t2, :t3, :t4) GROUP BY tool"
)
BASELINE_ERRORS = query(
    "SELECT tool, error_signature, count(*) AS n FROM tool_calls WHERE namespace = :namespace "
    "AND error_signature IS NOT NULL GROUP BY tool, error_signature ORDER BY n DESC LIMIT 15"
)

TOOLS = [f"tool_{i:02d}" for i in range(40)]
ERRORS = ["timeout after {n}s", "invalid date '{n}/05'", "user {n} not found", "rate limited", "BadIban"]
NS = "bench"
SESSION_CALLS = 50


async def fill(engine: Engine, calls: int) -> None:
    rng = random.Random(7)
    started = time.perf_counter()
    for index in range(calls):
        failed = rng.random() < 0.2
        call = ToolOutcome(
            tool=rng.choice(TOOLS),
            args={"id": rng.randrange(10_000), "mode": rng.choice(["fast", "safe", "full"])},
            outcome=Outcome.FAILURE if failed else Outcome.SUCCESS,
            error_message=rng.choice(ERRORS).format(n=rng.randint(1, 60)) if failed else None,
            duration_ms=rng.uniform(5, 900),
        )
        await engine.session(NS, f"bulk-{index // SESSION_CALLS}").record_tool_outcome(call=call)
        if (index + 1) % max(1, calls // 10) == 0:
            rate = (index + 1) / (time.perf_counter() - started)
            print(f"  {index + 1:,} calls logged, {rate:,.0f}/s", file=sys.stderr)


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
        await engine.session(NS, "live").record_tool_outcome(call=call)


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


async def run(calls: int, tail: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        # A million commits: NORMAL spares each its flush to disk (what is timed only reads).
        engine = await Engine.open(Path(scratch) / "bench.db", EngineConfig(synchronous=Synchronous.NORMAL))
        try:
            started = time.perf_counter()
            await fill(engine, calls - tail)
            await record_tail(engine, tail)
            async with engine.db.read(None) as conn:
                (logged,) = await conn.one("SELECT count(*) FROM tool_calls")
            print(f"logged calls: {logged:,} (filled in {time.perf_counter() - started:.0f} s)")

            async def hints(**ask) -> None:
                knowledge = await engine.namespace(NS).procedural_knowledge(**ask)
                render_hints(knowledge, engine.counter, 600)

            async def baseline() -> None:
                async with engine.db.read(None) as conn:
                    await baseline_queries(conn)

            async def baseline_queries(conn) -> None:
                await conn.all(
                    BASELINE_STATS, namespace=NS, **{f"t{n}": tool for n, tool in enumerate(TOOLS[:5])}
                )
                await conn.all(BASELINE_ERRORS, namespace=NS)

            report("get_procedural_hints (latest tools)", await timed(50, hints))
            report("get_procedural_hints (tools=5 named)", await timed(50, lambda: hints(tools=TOOLS[:5])))
            report(
                "get_procedural_hints (error_type)",
                await timed(50, lambda: hints(error_type="invalid date '1/1'")),
            )
            report("baseline: the same figures from the log (GROUP BY)", await timed(5, baseline))
        finally:
            await engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calls", type=int, nargs="?", default=1_000_000, help="calls in the log")
    parser.add_argument(
        "--tail", type=int, default=2_000, help="the last calls: five tools, failures and their fixes"
    )
    options = parser.parse_args()
    anyio.run(run, options.calls, min(options.tail, options.calls))


if __name__ == "__main__":
    main()
