"""One size of the scale benchmark on memvm: fill N pages through ingest, then time each operation.

    .venv/bin/python tests/bench/scale_memvm.py --pages N [--samples S] [--bulk] [--dir DIR] [--db-url URL]

Run by `scale.py`, once per size in a fresh process, so that the process's peak RSS belongs to
this size alone. `--bulk` fills through `write_history` instead (see fill_bulk). Prints one JSON
object on stdout; progress goes to stderr.
"""

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from fresh_postgres import Databases
from measure import OPERATIONS, peak_rss_mb, rss_mb, summary
from memvm.engine import Engine
from memvm.engine.models.pages import Level, Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage
from memvm.engine.paging.history_write import HistoryMessage
from memvm.resources.context import render_developer_message
from memvm.resources.procedural import render_hints
from memvm.resources.rules import RuleMode
from synthetic import TOOL_NAMES, Corpus

NS = "bench"
AGENT = "agent"  # the session that faults, searches, binds and records
CONVERSATION = 200  # messages per filled session
BATCH = 50  # messages per ingest call while filling


async def timed(samples: int, call: Callable[[int], Awaitable[Any]]) -> dict[str, float]:
    durations = []
    for index in range(samples):
        start = time.perf_counter()
        await call(index)
        durations.append(time.perf_counter() - start)
    return summary(durations)


async def fill(engine: Engine, corpus: Corpus, pages: int) -> float:
    """Ingest `pages` messages as conversations of CONVERSATION turns; seconds taken."""
    start = time.perf_counter()
    written = 0
    next_report = pages // 10
    while written < pages:
        session = f"conv-{written // CONVERSATION}"
        count = min(BATCH, pages - written, CONVERSATION - written % CONVERSATION)
        messages = [
            IngestMessage(
                role=Role.USER if (written + i) % 2 == 0 else Role.ASSISTANT, content=corpus.message()
            )
            for i in range(count)
        ]
        await engine.session(NS, session).ingest(messages=messages)
        written += count
        if written >= next_report:
            elapsed = time.perf_counter() - start
            print(f"  memvm: {written:,} pages, {written / elapsed:,.0f} pages/s", file=sys.stderr)
            next_report += pages // 10
    return time.perf_counter() - start


async def fill_bulk(engine: Engine, corpus: Corpus, pages: int) -> float:
    """The same messages, written as past conversations through `Engine.write_history`; seconds taken.

    write_history stores each message as the transcript page ingest would store (its four levels,
    token counts and full-text entry), in transactions of hundreds of pages, and maps it into no
    working set: only the bookkeeping of a live conversation (its working set and mutation log) is
    skipped. For sizes where ingest itself would take hours. The messages are dated a second apart,
    the last one now, and get ids msg_000001 onwards, as ingest would give them in a new namespace.
    """
    start = time.perf_counter()
    first_at = time.time() - pages
    next_report = pages // 10
    for first in range(0, pages, CONVERSATION):
        messages = [
            HistoryMessage(
                role=Role.USER if index % 2 == 0 else Role.ASSISTANT,
                content=corpus.message(),
                created_at=first_at + index,
                source_id=str(index),
            )
            for index in range(first, min(pages, first + CONVERSATION))
        ]
        await engine.session(NS, f"conv-{first // CONVERSATION}").write_history(
            source="bench", title=None, messages=messages
        )
        written = first + len(messages)
        if written >= next_report:
            elapsed = time.perf_counter() - start
            print(f"  memvm (bulk): {written:,} pages, {written / elapsed:,.0f} pages/s", file=sys.stderr)
            next_report += max(1, pages // 10)
    return time.perf_counter() - start


async def run(pages: int, samples: int, target: str, bulk: bool) -> dict[str, Any]:
    engine = await Engine.open(target)
    corpus = Corpus()
    rng = random.Random(7)
    try:
        seconds = await (fill_bulk if bulk else fill)(engine, corpus, pages)
        after_fill = rss_mb()
        ops: dict[str, dict[str, float]] = {}

        async def ingest_one(_: int) -> None:
            await engine.session(NS, AGENT).ingest(
                messages=[IngestMessage(role=Role.USER, content=corpus.message())]
            )

        async def page_fault(index: int) -> None:
            if index % 3 == 0:  # three faults a turn, the default allowance
                await engine.session(NS, AGENT).begin_turn()
            page_id = f"msg_{rng.randint(1, pages):06d}"
            await engine.session(NS, AGENT).page_fault(page_id=page_id, target_level=Level(rng.randrange(4)))

        async def search(_: int) -> None:
            await engine.session(NS, AGENT).search(query=corpus.query(), limit=5)

        async def build_context(_: int) -> None:
            await render_developer_message(engine.session(NS, AGENT), mode=RuleMode.STRICT)

        async def bind_value(index: int) -> None:
            await engine.session(NS, AGENT).bind_value(
                tool="get_rate", args={"pair": f"EUR/USD-{index}"}, value=round(rng.uniform(0.5, 2.0), 5)
            )

        arguments = {"amount": 1234.5, "order": {"lines": [{"qty": 3, "price": "$19.99"}]}, "note": "pay $v1"}

        async def check_ungrounded(_: int) -> None:
            await engine.session(NS, AGENT).check_ungrounded(args=arguments)

        async def check_tool_call(index: int) -> None:
            if index % 10 == 0:
                await engine.session(NS, AGENT).begin_turn()
            await engine.session(NS, AGENT).check_tool_call(
                tool="convert", args={"amount": "$v1", "to": "EUR", "fee": index}
            )

        async def record_tool_outcome(index: int) -> None:
            failed = rng.random() < 0.2
            await engine.session(NS, AGENT).record_tool_outcome(
                call=ToolOutcome(
                    tool=rng.choice(TOOL_NAMES),
                    args={"id": index % 50, "mode": rng.choice(["fast", "safe"])},
                    outcome=Outcome.FAILURE if failed else Outcome.SUCCESS,
                    result=None if failed else {"ok": True, "value": index},
                    error_message=f"timeout after {index % 30}s" if failed else None,
                    duration_ms=rng.uniform(5, 500),
                )
            )

        async def procedural_hints(_: int) -> None:
            knowledge = await engine.namespace(NS).procedural_knowledge(tools=rng.sample(TOOL_NAMES, 2))
            render_hints(knowledge, engine.counter, 500)

        calls = [
            ingest_one,
            page_fault,
            search,
            build_context,
            bind_value,
            check_ungrounded,
            check_tool_call,
            record_tool_outcome,
            procedural_hints,
        ]
        for name, call in zip(OPERATIONS, calls, strict=True):
            ops[name] = await timed(samples, call)
            print(f"  memvm: {name} p50 {ops[name]['p50_ms']:.2f} ms", file=sys.stderr)
    finally:
        await engine.close()
    return {
        "system": "memvm",
        "fill": "bulk" if bulk else "ingest",
        "pages": pages,
        "fill_seconds": seconds,
        "ingest_pages_per_s": pages / seconds,
        "ops": ops,
        "rss_after_fill_mb": after_fill,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument(
        "--bulk", action="store_true", help="fill through write_history (past conversations), not ingest"
    )
    parser.add_argument("--dir", type=Path, help="where the database goes (default: a temporary folder)")
    parser.add_argument(
        "--db-url", help="run on PostgreSQL: a server's URL (a fresh database), or 'auto' for a throwaway one"
    )
    options = parser.parse_args()
    if options.db_url:
        databases = Databases(None if options.db_url == "auto" else options.db_url)
        try:
            target = databases.fresh()
            result = anyio.run(run, options.pages, options.samples, target, options.bulk)
            result["backend"] = "postgresql"
            result["db_bytes"] = databases.size(target)
        finally:
            databases.close()
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory(dir=options.dir) as folder:
        result = anyio.run(run, options.pages, options.samples, str(Path(folder) / "scale.db"), options.bulk)
        # The database and its WAL, as the run left them (the engine is closed, so checkpointed).
        result["backend"] = "sqlite"
        result["db_bytes"] = sum(f.stat().st_size for f in Path(folder).glob("scale.db*"))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
