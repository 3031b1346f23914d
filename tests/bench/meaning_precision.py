"""What search finds by meaning for a prompt about nothing it holds, against what it finds for a
question asked in other words, for each cosine floor a page found by meaning must reach.

    .venv/bin/python tests/bench/meaning_precision.py [--sets dev,everyday,check] [--floors=-1,0.2,0.25,0.3,0.35]
        [--out FILE]

A page stands out by meaning relative to the query's nearest pages, and whatever the prompt, its
nearest page stands out of the crowd: a prompt about nothing in the namespace would have a page
"found by meaning" almost every time, and the hooks put such a page before the model unasked. The
floor (SearchTuning.meaning_min_cosine) asks for a cosine an unrelated page seldom reaches.

Each paraphrase set's notes are written as retrieval.py writes them (one page each, in one
namespace) and embedded once; then for each floor:
- unrelated: the prompts of data/unrelated_prompts.json (a coding or general assistant's prompts,
  about nothing in the notes), and how many of them get a page found by meaning alone (matched
  `meaning`, not merely listed for being near, fusion.merely_near): what the hooks would show;
- context: how many of those prompts the hooks' recall (hooks/recall.py) gives stored pages, by
  words or by meaning: what a host's model is shown unasked;
- R@5: the share of the set's questions whose note is in the first five (the baseline beside it is
  no floor, -1: every page that stands out is found).
"""

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from measure import write_report
from memvm.engine import Engine
from memvm.engine.config import EngineConfig, SearchTuning
from memvm.engine.paging.fusion import merely_near
from memvm.hooks.recall import PAGES_TITLE, recall
from retrieval import NS, EngineMemory, ingest_haystack, paraphrase

DATA = Path(__file__).parent / "data"
PROMPTS = DATA / "unrelated_prompts.json"
DEFAULT = SearchTuning()


async def measured_set(path: Path, floors: list[float], prompts: list[str], folder: Path) -> dict[str, Any]:
    """One set's figures for each floor, its notes embedded once in a file of `folder`."""
    (haystack,) = paraphrase(path)
    file = str(folder / f"{path.stem}.db")
    first = await Engine.open(file)
    try:
        memory = EngineMemory(first)
        page_of = await ingest_haystack(memory, haystack)
        await memory.embedded()
    finally:
        await first.close()
    figures: dict[str, Any] = {}
    for floor in floors:
        engine = await Engine.open(file, EngineConfig(search=replace(DEFAULT, meaning_min_cosine=floor)))
        try:
            scope = engine.session(NS, "asking")
            unrelated = context = 0
            for prompt in prompts:
                hits = (await scope.search(query=prompt, limit=8)).results
                unrelated += any(h.matched == "meaning" and not merely_near(h.matched, h.score) for h in hits)
                shown = await recall(scope, query=prompt, own_pages=set(), max_tokens=4000)
                context += shown is not None and PAGES_TITLE in shown
            found = []
            for question in haystack.questions:
                hits = (await scope.search(query=question.text, limit=5)).results
                found.append(any(page_of.get(hit.page_id) in question.evidence for hit in hits))
            figures[str(floor)] = {
                "unrelated": unrelated,
                "context": context,
                "prompts": len(prompts),
                "R@5": statistics.fmean(found),
            }
        finally:
            await engine.close()
    return figures


async def measure(arguments: argparse.Namespace) -> dict[str, Any]:
    prompts = json.loads(PROMPTS.read_text(encoding="utf-8"))["prompts"]
    floors = [float(value) for value in arguments.floors.split(",")]
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memvm-precision-") as scratch:
        for name in arguments.sets.split(","):
            report[name] = await measured_set(
                DATA / f"paraphrase_{name}.json", floors, prompts, Path(scratch)
            )
    print(f"{'':<17} {'unrelated prompts':>40}")
    print(f"{'set':<10} {'floor':>6} {'a page found by meaning':>24} {'pages in context':>17} {'R@5':>7}")
    for name, rows in report.items():
        for floor, row in rows.items():
            default = "  (default)" if float(floor) == DEFAULT.meaning_min_cosine else ""
            found = f"{row['unrelated']} of {row['prompts']}"
            context = f"{row['context']} of {row['prompts']}"
            print(f"{name:<10} {float(floor):>6.2f} {found:>24} {context:>17} {row['R@5']:>7.3f}{default}")
    return report


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sets", default="dev,everyday,check", help="paraphrase sets, by the name after paraphrase_"
    )
    parser.add_argument(
        "--floors", default="-1,0.2,0.25,0.3,0.35", help="cosine floors to compare (-1: none)"
    )
    parser.add_argument("--out", help="JSON result (default tests/bench/out/meaning-precision.json)")
    arguments = parser.parse_args(argv)
    report = anyio.run(measure, arguments)
    write_report(report, arguments.out, "meaning-precision.json")


if __name__ == "__main__":
    main(sys.argv[1:])
