"""One size of the scale benchmark on chuk-ai-session-manager, the design's predecessor.

    <its venv>/bin/python tests/bench/scale_predecessor.py --pages N [--samples S] [--budget-s T]

Run by `scale.py` with the interpreter of the virtual environment it creates for the predecessor
(memvm is not importable here). The same seeded text and the same operations as
`scale_memvm.py`, through the predecessor's own API: a page is written as its SessionManager
writes a message (`create_page` with a 120-character hint, then `add_to_working_set`). An
operation stops early once `--budget-s` seconds are spent on it, so slow searches at large sizes
finish. Prints one JSON object on stdout.
"""

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from chuk_ai_session_manager.guards.manager import ToolStateManager
from chuk_ai_session_manager.memory.manager import MemoryManager
from chuk_ai_session_manager.memory.models import PageType
from chuk_ai_session_manager.procedural_memory.formatter import ProceduralContextFormatter
from chuk_ai_session_manager.procedural_memory.manager import ToolMemoryManager
from chuk_ai_session_manager.procedural_memory.models import ToolOutcome
from measure import OPERATIONS, peak_rss_mb, rss_mb, summary
from synthetic import TOOL_NAMES, Corpus


async def timed(samples: int, budget_s: float, call: Callable[[int], Awaitable[Any]]) -> dict[str, float]:
    durations: list[float] = []
    for index in range(samples):
        start = time.perf_counter()
        await call(index)
        durations.append(time.perf_counter() - start)
        if sum(durations) > budget_s and len(durations) >= 3:
            break
    return summary(durations)


async def write(vm: MemoryManager, text: str, role: str) -> str:
    page = vm.create_page(text, page_type=PageType.TRANSCRIPT, hint=f"[{role}] {text[:120]}")
    await vm.add_to_working_set(page)
    return page.page_id


async def run(pages: int, samples: int, budget_s: float) -> dict[str, Any]:
    corpus = Corpus()
    rng = random.Random(7)
    vm = MemoryManager(session_id="bench")
    page_ids: list[str] = []
    start = time.perf_counter()
    next_report = pages // 10
    for index in range(pages):
        page_ids.append(await write(vm, corpus.message(), "user" if index % 2 == 0 else "assistant"))
        if index + 1 >= next_report:
            elapsed = time.perf_counter() - start
            print(
                f"  predecessor: {index + 1:,} pages, {(index + 1) / elapsed:,.0f} pages/s", file=sys.stderr
            )
            next_report += pages // 10
    seconds = time.perf_counter() - start
    after_fill = rss_mb()
    guards = ToolStateManager()
    procedures = ToolMemoryManager.create(session_id="bench")
    formatter = ProceduralContextFormatter()
    ops: dict[str, dict[str, float]] = {}

    async def ingest_one(index: int) -> None:
        await write(vm, corpus.message(), "user")

    async def page_fault(index: int) -> None:
        if index % 3 == 0:
            vm.new_turn()
        await vm.handle_fault(rng.choice(page_ids), target_level=rng.randrange(4))

    async def search(_: int) -> None:
        await vm.search_pages(corpus.query(), limit=5)

    async def build_context(_: int) -> None:
        vm.build_context()

    async def bind_value(index: int) -> None:
        guards.bind_value("get_rate", {"pair": f"EUR/USD-{index}"}, round(rng.uniform(0.5, 2.0), 5))

    arguments = {"amount": 1234.5, "order": {"lines": [{"qty": 3, "price": "$19.99"}]}, "note": "pay $v1"}

    async def check_ungrounded(_: int) -> None:
        guards.check_ungrounded_call("convert", arguments)

    async def check_tool_call(index: int) -> None:
        if index % 10 == 0:
            guards.reset_for_new_prompt()
        guards.check_all_guards("convert", {"amount": "$v1", "to": "EUR", "fee": index})

    async def record_tool_outcome(index: int) -> None:
        failed = rng.random() < 0.2
        await procedures.record_call(
            tool_name=rng.choice(TOOL_NAMES),
            arguments={"id": index % 50, "mode": rng.choice(["fast", "safe"])},
            result=None if failed else {"ok": True, "value": index},
            outcome=ToolOutcome.FAILURE if failed else ToolOutcome.SUCCESS,
            error_message=f"timeout after {index % 30}s" if failed else None,
            execution_time_ms=int(rng.uniform(5, 500)),
        )

    async def procedural_hints(_: int) -> None:
        formatter.format_for_tools(procedures, rng.sample(TOOL_NAMES, 2))

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
        ops[name] = await timed(samples, budget_s, call)
        print(f"  predecessor: {name} p50 {ops[name]['p50_ms']:.2f} ms", file=sys.stderr)
    return {
        "system": "chuk-ai-session-manager",
        "pages": pages,
        "fill_seconds": seconds,
        "ingest_pages_per_s": pages / seconds,
        "ops": ops,
        "db_bytes": None,  # nothing is stored: everything lives in process memory
        "rss_after_fill_mb": after_fill,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--budget-s", type=float, default=30.0, help="seconds at most per operation")
    options = parser.parse_args()
    print(json.dumps(asyncio.run(run(options.pages, options.samples, options.budget_s))))


if __name__ == "__main__":
    main()
