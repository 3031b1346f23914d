"""Each search idea measured honestly: chosen on some folds of the development data, scored on the others.

    python tests/bench/retrieval_ideas.py --locomo PATH/locomo_dev.json \\
        --longmemeval PATH/longmemeval_s_dev.json.gz [--limit N] [--questions N] [--keep DIR] [--out FILE]

The protocol is retrieval.py's (one page per turn through memvm's ingest, a fresh database per
conversation or haystack, one search per question), at a depth of 10 (R@5 and R@10). The
development data is split into five folds: by conversation for LoCoMo (its five development
conversations), by question for LongMemEval_S (sha1 of the question id, mod 5).

For each idea (a SearchTuning field, or a few fields together) a handful of values are searched,
the first of them switching it off, the others at the defaults. For each fold, the value with the
best R@10 on the other four folds of both datasets (their mean) is chosen and scored on the fold
it never saw. An idea is kept only when its chosen values beat "off" on the held-out folds of one
dataset by more than half a question's worth of recall and lose nothing on the other: some ideas
cannot act on one of them (LongMemEval has no
speaker names; LoCoMo's questions are in the third person, so no pronoun names a role). Then the whole procedure is cross-validated: each fold gets every idea's value chosen
without it, all together, and is searched with them. That is the held-out estimate to quote;
the defaults' own figure on all of the data is the development figure, fitted to it.
`--keep DIR` keeps the ingested databases there and reuses them on the next run. `--limit` and
`--questions` take the first haystacks of each dataset and the first questions of each: a sample
too small to choose anything on, which runs the whole procedure quickly (a fold with no question
counts for nothing).
"""

import argparse
import hashlib
import json
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import anyio
from measure import write_report
from memvm.engine import Engine
from memvm.engine.config import SearchTuning
from memvm.engine.paging.search import search_pages
from retrieval import (
    NS,
    BenchClock,
    EngineMemory,
    Haystack,
    Question,
    Score,
    ingest_haystack,
    locomo,
    longmemeval,
    score,
)

FOLDS = 5
DEPTH = 10
DEFAULT = SearchTuning()
DATASETS = ("LoCoMo", "LongMemEval_S")

# Each idea's values, "off" first; a value is the SearchTuning fields it sets.
IDEAS: dict[str, list[dict[str, Any]]] = {
    "neighbours": [{"neighbour_weight": w} for w in (0.0, 0.15, 0.3, 0.6)],
    "speaker names": [{"speaker_boost": w} for w in (0.0, 0.5, 1.0, 2.0)],
    "pronoun roles": [{"role_boost": w} for w in (0.0, 0.5, 1.0, 2.0)],
    "session": [{"session_weight": w} for w in (0.0, 0.25, 0.5, 1.0)],
    "BM25 length normalisation": [{"bm25_b": b} for b in (0.75, 0.4, 0.6, 0.9)],
    "BM25 saturation": [{"bm25_k1": k} for k in (1.2, 0.9, 1.6)],  # 1.2: the usual constant
    "time named": [{"time_boost": w} for w in (0.0, 0.5, 1.0, 2.0)],
    "second round": [
        {"feedback_pages": 0},
        *(
            {"feedback_pages": pages, "feedback_terms": terms, "feedback_weight": weight}
            for pages, terms, weight in ((5, 10, 0.15), (5, 10, 0.3), (10, 10, 0.3), (3, 20, 0.3))
        ),
    ],
}


def label(value: dict[str, Any]) -> str:
    return ", ".join(f"{field}={setting}" for field, setting in value.items())


@dataclass
class Asked:
    """One question's scores under every variant searched, and the fold it belongs to."""

    fold: int
    counted: bool
    category: str
    scores: dict[str, Score]


def fold_of(dataset: str, index: int, haystack: Haystack) -> int:
    if dataset == "LoCoMo":  # one conversation per fold
        return index % FOLDS
    return int(hashlib.sha1(haystack.name.encode()).hexdigest(), 16) % FOLDS


async def scored(
    engine: Engine, text: str, tuning: SearchTuning, depth: int = DEPTH, now: float | None = None
) -> list[tuple[str, float]]:
    """The `depth` best pages for `text` asked at `now` (the engine's clock), with their scores."""
    if now is not None and isinstance(engine.clock, BenchClock):
        engine.clock.at = now
    async with engine.db.read(None) as conn:
        found = await search_pages(
            conn,
            namespace=NS,
            viewer_session="bench",
            query=text,
            limit=depth,
            tuning=tuning,
            stemmer=engine.stemmer,
        )
    return [(hit.page_id, hit.score) for hit in found.results]


async def search(engine: Engine, question: Question, tuning: SearchTuning) -> list[str]:
    return [page for page, _ in await scored(engine, question.text, tuning, now=question.asked_at)]


class Haystacks:
    """The ingested databases of one dataset, each opened when searched."""

    def __init__(self, dataset: str, haystacks: list[Haystack], folder: Path) -> None:
        self.dataset, self.haystacks, self.folder = dataset, haystacks, folder

    async def each(self, visit: Callable[[int, Engine, dict[str, str]], Any]) -> None:
        for index, haystack in enumerate(self.haystacks):
            db = self.folder / f"{self.dataset}-{haystack.name}.db"
            pages = db.with_suffix(".pages.json")
            if db.exists() and not pages.exists():
                db.unlink()  # an ingest cut short
            engine = await Engine.open(db, clock=BenchClock())
            try:
                if not pages.exists():
                    pages.write_text(json.dumps(await ingest_haystack(EngineMemory(engine), haystack)))
                await visit(index, engine, json.loads(pages.read_text()))
            finally:
                await engine.close()


async def searched(store: Haystacks, tunings: dict[str, SearchTuning]) -> list[Asked]:
    """Every question of the dataset under every tuning."""
    asked: list[Asked] = []

    async def visit(index: int, engine: Engine, page_of: dict[str, str]) -> None:
        haystack = store.haystacks[index]
        for question in haystack.questions:
            scores = {}
            for name, tuning in tunings.items():
                started = time.perf_counter()
                ranked = await search(engine, question, tuning)
                millis = (time.perf_counter() - started) * 1000
                scores[name] = score(question, [page_of.get(page) for page in ranked], millis)
            fold = fold_of(store.dataset, index, haystack)
            asked.append(Asked(fold, not question.reported_apart, question.category, scores))

    await store.each(visit)
    return asked


async def searched_per_fold(store: Haystacks, tunings: list[SearchTuning]) -> list[Asked]:
    """Each question under the tuning of its own fold, as the variant "held out"."""
    asked: list[Asked] = []

    async def visit(index: int, engine: Engine, page_of: dict[str, str]) -> None:
        haystack = store.haystacks[index]
        fold = fold_of(store.dataset, index, haystack)
        for question in haystack.questions:
            ranked = await search(engine, question, tunings[fold])
            found = score(question, [page_of.get(page) for page in ranked], 0.0)
            asked.append(Asked(fold, not question.reported_apart, question.category, {"held out": found}))

    await store.each(visit)
    return asked


def mean(values: Iterable[float]) -> float:
    """The mean, or NaN for none (a sample of the data may leave a fold or category empty)."""
    listed = list(values)
    return statistics.fmean(listed) if listed else math.nan


def recall(asked: list[Asked], variant: str, k: int = 10, folds: set[int] | None = None) -> float:
    return mean(
        a.scores[variant].recall[k] for a in asked if a.counted and (folds is None or a.fold in folds)
    )


def per_fold(asked: list[Asked], variant: str) -> list[float]:
    return [recall(asked, variant, folds={fold}) for fold in range(FOLDS)]


def chosen_values(results: dict[str, list[Asked]], names: list[str]) -> list[str]:
    """For each fold, the variant among `names` with the best R@10 on the other folds of both datasets."""
    choices = []
    for fold in range(FOLDS):
        others = set(range(FOLDS)) - {fold}
        choices.append(
            max(
                names,
                key=lambda name: statistics.fmean(
                    recall(asked, name, folds=others) for asked in results.values()
                ),
            )
        )
    return choices


def held_out(results: dict[str, list[Asked]], choices: list[str]) -> dict[str, list[float]]:
    """Each dataset's R@10 on each fold under the variant chosen without it."""
    return {
        dataset: [recall(asked, choices[fold], folds={fold}) for fold in range(FOLDS)]
        for dataset, asked in results.items()
    }


def overall(asked: list[Asked], folds_scores: list[float]) -> float:
    """The folds' figures weighted by their questions: the whole data's figure."""
    sizes = [sum(1 for a in asked if a.counted and a.fold == fold) for fold in range(FOLDS)]
    return sum(s * n for s, n in zip(folds_scores, sizes, strict=True) if n) / max(1, sum(sizes))


def variant_names(idea: str) -> list[str]:
    return [f"{idea}: {label(value)}" for value in IDEAS[idea]]


def tunings() -> dict[str, SearchTuning]:
    found = {"defaults": DEFAULT}
    for idea, values in IDEAS.items():
        for name, value in zip(variant_names(idea), values, strict=True):
            found[name] = replace(DEFAULT, **value)
    return found


def cross_validated_tuning(choices: dict[str, list[str]], fold: int) -> SearchTuning:
    """The defaults with every idea at the value chosen without `fold`."""
    update: dict[str, Any] = {}
    for idea, per_fold_choice in choices.items():
        update |= IDEAS[idea][variant_names(idea).index(per_fold_choice[fold])]
    return replace(DEFAULT, **update)


def spread(values: list[float]) -> str:
    known = [value for value in values if not math.isnan(value)]
    return f"{min(known):.3f}-{max(known):.3f}" if known else "-"


def both_datasets(arguments: argparse.Namespace, folder: Path) -> dict[str, Haystacks]:
    """The development data of both datasets, ingested into (or found in) `folder`."""
    return {
        "LoCoMo": Haystacks("LoCoMo", sample(locomo(Path(arguments.locomo)), arguments), folder),
        "LongMemEval_S": Haystacks(
            "LongMemEval_S", sample(longmemeval(Path(arguments.longmemeval)), arguments), folder
        ),
    }


def sample(haystacks: Iterable[Haystack], arguments: argparse.Namespace) -> list[Haystack]:
    """The first --limit haystacks, each with its first --questions questions (0: all)."""
    kept = list(haystacks)[: arguments.limit or None]
    for haystack in kept:
        haystack.questions = haystack.questions[: arguments.questions or None]
    return kept


def data_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments of a benchmark over both datasets' development data."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--locomo", required=True, help="path to locomo_dev.json (read in place)")
    parser.add_argument("--longmemeval", required=True, help="path to longmemeval_s_dev.json.gz")
    parser.add_argument("--limit", type=int, default=0, help="only the first N haystacks of each")
    parser.add_argument(
        "--questions", type=int, default=0, help="only the first N questions of each haystack"
    )
    parser.add_argument("--keep", type=Path, help="keep the ingested databases here, and reuse them")
    return parser


def run_in_folder(arguments: argparse.Namespace, measure: Callable[[argparse.Namespace, Path], Any]) -> Any:
    """`measure` run with the databases in --keep's folder, or in a scratch one."""
    with tempfile.TemporaryDirectory(prefix="memvm-retrieval-") as scratch:
        folder = arguments.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        return anyio.run(measure, arguments, folder)


async def measure(arguments: argparse.Namespace, folder: Path) -> dict[str, Any]:
    stores = both_datasets(arguments, folder)
    variants = tunings()
    results = {dataset: await searched(store, variants) for dataset, store in stores.items()}
    report: dict[str, Any] = {"defaults": asdict(DEFAULT), "ideas": {}}
    print(f"\n{'development figures (R@10 on all of the data)':<58} {'LoCoMo':>8} {'multi':>7} {'LME_S':>8}")
    for name in variants:
        lo, lme = results["LoCoMo"], results["LongMemEval_S"]
        multi = mean(a.scores[name].recall[10] for a in lo if a.counted and a.category == "1 multi-hop")
        print(f"{name:<58} {recall(lo, name):>8.3f} {multi:>7.3f} {recall(lme, name):>8.3f}")
    print(
        f"\n{'held-out figures (R@10, folds min-max)':<32} {'LoCoMo off':>11} {'chosen':>20} {'LME off':>9} {'chosen':>20}  kept"
    )
    choices: dict[str, list[str]] = {}
    for idea in IDEAS:
        names = variant_names(idea)
        chosen = chosen_values(results, names)
        off = held_out(results, [names[0]] * FOLDS)
        found = held_out(results, chosen)
        gains = {
            dataset: overall(results[dataset], found[dataset]) - overall(results[dataset], off[dataset])
            for dataset in DATASETS
        }
        # A gain of less than half a question's worth of recall is no gain.
        tied = {dataset: 0.5 / max(1, sum(a.counted for a in results[dataset])) for dataset in DATASETS}
        kept = any(gains[d] > tied[d] for d in DATASETS) and all(gains[d] >= 0 for d in DATASETS)
        choices[idea] = chosen if kept else [names[0]] * FOLDS
        lo_off, lo = overall(results["LoCoMo"], off["LoCoMo"]), overall(results["LoCoMo"], found["LoCoMo"])
        me_off, me = (
            overall(results["LongMemEval_S"], off["LongMemEval_S"]),
            overall(results["LongMemEval_S"], found["LongMemEval_S"]),
        )
        print(
            f"{idea:<32} {lo_off:>11.3f} {lo:>6.3f} ({spread(found['LoCoMo'])}) {me_off:>9.3f} "
            f"{me:>6.3f} ({spread(found['LongMemEval_S'])})  {'yes' if kept else 'no'}"
        )
        print(f"{'':<32} chosen per fold: {' | '.join(name.split(': ', 1)[1] for name in chosen)}")
        report["ideas"][idea] = {
            "chosen_per_fold": chosen,
            "kept": kept,
            **{f"{dataset}_off": off[dataset] for dataset in DATASETS},
            **{f"{dataset}_held_out": found[dataset] for dataset in DATASETS},
        }
    per_fold_tunings = [cross_validated_tuning(choices, fold) for fold in range(FOLDS)]
    whole = {dataset: await searched_per_fold(store, per_fold_tunings) for dataset, store in stores.items()}
    print("\nthe whole procedure, cross-validated (each fold searched with the ideas chosen without it):")
    report["cross_validated"] = {}
    for dataset, asked in whole.items():
        folds = per_fold(asked, "held out")
        figures = {
            "R@5": round(recall(asked, "held out", 5), 3),
            "R@10": round(recall(asked, "held out"), 3),
            "R@10_folds": [round(value, 3) for value in folds],
        }
        if dataset == "LoCoMo":
            multi = [
                a.scores["held out"].recall[10] for a in asked if a.counted and a.category == "1 multi-hop"
            ]
            figures["multi_hop_R@10"] = round(mean(multi), 3)
        dev = {
            "R@5": round(recall(results[dataset], "defaults", 5), 3),
            "R@10": round(recall(results[dataset], "defaults"), 3),
        }
        report["cross_validated"][dataset] = figures
        report.setdefault("development", {})[dataset] = dev
        print(
            f"  {dataset:<14} R@5 {figures['R@5']:.3f}  R@10 {figures['R@10']:.3f} (folds {spread(folds)})"
            + (f"  multi-hop R@10 {figures['multi_hop_R@10']:.3f}" if "multi_hop_R@10" in figures else "")
            + f"   | development (the defaults on all of it): R@5 {dev['R@5']:.3f}  R@10 {dev['R@10']:.3f}"
        )
    by_category: dict[str, dict[str, float]] = {}
    for dataset, asked in whole.items():
        groups: defaultdict[str, list[float]] = defaultdict(list)
        for a in asked:
            if a.counted:
                groups[a.category].append(a.scores["held out"].recall[10])
        by_category[dataset] = {name: round(statistics.fmean(v), 3) for name, v in sorted(groups.items())}
    report["cross_validated_by_category"] = by_category
    return report


def main(argv: list[str]) -> None:
    parser = data_arguments(__doc__.split("\n")[0])
    parser.add_argument("--out", help="JSON result (default tests/bench/out/retrieval-ideas.json)")
    arguments = parser.parse_args(argv)
    report = run_in_folder(arguments, measure)
    print()
    write_report(report, arguments.out, "retrieval-ideas.json")


if __name__ == "__main__":
    main(sys.argv[1:])
