"""Each search idea's effect on both retrieval datasets: alone over BM25, and removed from the whole.

    python tests/bench/retrieval_ideas.py --locomo PATH/locomo_dev.json \\
        --longmemeval PATH/longmemeval_s_dev.json.gz [--limit N] [--out FILE]

The protocol is retrieval.py's (one page per turn through memvm's ingest, a fresh database per
conversation or haystack, one search per question). Each haystack is ingested once and every
variant of SearchTuning searches the same pages, so the rows differ only by the idea. An idea is
kept in the defaults only if removing it costs on both datasets.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from memvm.engine import Engine
from memvm.engine.config import SearchTuning
from memvm.engine.paging.search import search_pages
from retrieval import (
    DEPTH,
    NS,
    EngineMemory,
    Haystack,
    Score,
    ingest_haystack,
    locomo,
    longmemeval,
    score,
    summarise,
)

DEFAULT = SearchTuning()
NOTHING = {"neighbour_weight": 0.0, "speaker_boost": 0.0, "role_boost": 0.0, "session_weight": 0.0}
# Each idea as the fields that switch it off.
IDEAS = {
    "neighbours": {"neighbour_weight": 0.0},
    "length scaling": {"context_tokens": 100_000},  # of the neighbour bonus
    "speaker names": {"speaker_boost": 0.0},
    "pronoun roles": {"role_boost": 0.0},
    "session": {"session_weight": 0.0},
}
ALONE = {
    "neighbours": {"neighbour_weight": DEFAULT.neighbour_weight},
    "speaker names": {"speaker_boost": DEFAULT.speaker_boost},
    "pronoun roles": {"role_boost": DEFAULT.role_boost},
    "session": {"session_weight": DEFAULT.session_weight},
}


def variants() -> dict[str, SearchTuning]:
    found = {"BM25 alone": DEFAULT.model_copy(update=NOTHING)}
    for name, fields in ALONE.items():
        found[f"BM25 + {name}"] = DEFAULT.model_copy(update={**NOTHING, **fields})
    found["all (the defaults)"] = DEFAULT
    for name, fields in IDEAS.items():
        found[f"all but {name}"] = DEFAULT.model_copy(update=fields)
    return found


async def run_haystack(
    engine: Engine, haystack: Haystack, tunings: dict[str, SearchTuning]
) -> dict[str, list[Score]]:
    page_of = await ingest_haystack(EngineMemory(engine), haystack)
    scores: dict[str, list[Score]] = {name: [] for name in tunings}
    for question in haystack.questions:
        for name, tuning in tunings.items():
            started = time.perf_counter()
            async with engine.db.read() as conn:
                found = await search_pages(
                    conn,
                    namespace=NS,
                    viewer_session="bench",
                    query=question.text,
                    limit=DEPTH,
                    tuning=tuning,
                    stemmer=engine.stemmer,
                )
            millis = (time.perf_counter() - started) * 1000
            scores[name].append(score(question, [page_of.get(hit.page_id) for hit in found.results], millis))
    return scores


async def measure(haystacks: list[Haystack], tunings: dict[str, SearchTuning]) -> dict[str, list[Score]]:
    scores: dict[str, list[Score]] = {name: [] for name in tunings}
    with tempfile.TemporaryDirectory(prefix="memvm-ideas-") as scratch:
        for index, haystack in enumerate(haystacks):
            engine = await Engine.open(Path(scratch) / f"haystack-{index}.db")
            try:
                for name, found in (await run_haystack(engine, haystack, tunings)).items():
                    scores[name].extend(found)
            finally:
                await engine.close()
    return scores


def figures(scores: list[Score], category: str | None = None) -> dict[str, Any]:
    counted = [s for s in scores if not s.reported_apart and (category is None or s.category == category)]
    return summarise(counted)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", required=True, help="path to locomo_dev.json (read in place)")
    parser.add_argument("--longmemeval", required=True, help="path to longmemeval_s_dev.json.gz")
    parser.add_argument("--limit", type=int, default=0, help="only the first N haystacks of each")
    parser.add_argument("--out", help="JSON result (default tests/bench/out/retrieval-ideas.json)")
    args = parser.parse_args(argv)
    tunings = variants()
    locomo_scores = anyio.run(measure, list(locomo(Path(args.locomo)))[: args.limit or None], tunings)
    lme_scores = anyio.run(measure, list(longmemeval(Path(args.longmemeval)))[: args.limit or None], tunings)
    result = {}
    print(f"\n{'':<40} {'LoCoMo':^34} | {'LongMemEval_S':^26}")
    print(
        f"{'variant':<40} {'R@5':>6} {'R@10':>6} {'multi':>6} {'MRR':>6} {'p95ms':>6} | "
        f"{'R@5':>6} {'R@10':>6} {'MRR':>6} {'p95ms':>6}"
    )
    for name in tunings:
        lo, multi, lme = (
            figures(locomo_scores[name]),
            figures(locomo_scores[name], "1 multi-hop"),
            figures(lme_scores[name]),
        )
        result[name] = {"locomo": lo, "locomo_multi_hop": multi, "longmemeval": lme}
        print(
            f"{name:<40} {lo['R@5']:>6.3f} {lo['R@10']:>6.3f} {multi['R@10']:>6.3f} {lo['MRR']:>6.3f} "
            f"{lo['p95_ms']:>6.1f} | {lme['R@5']:>6.3f} {lme['R@10']:>6.3f} {lme['MRR']:>6.3f} {lme['p95_ms']:>6.1f}"
        )
    out = Path(args.out or Path(__file__).parent / "out" / "retrieval-ideas.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"defaults": DEFAULT.model_dump(), "variants": result}, indent=1), encoding="utf-8"
    )
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
