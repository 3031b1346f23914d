"""How search ranks the pages that hold a query's terms: BM25 from the namespace's own statistics,
then the bonuses of SearchTuning (a page's neighbours in its conversation, the speaker the query
names, the side of the conversation its pronouns ask about, the time it names, the session's best).
"""

import math
import re
from collections import defaultdict

from memvm.engine.config import SearchTuning
from memvm.engine.models.pages import Role
from memvm.engine.storage.api import Row
from memvm.engine.storage.fulltext import Posting
from memvm.engine.storage.tokenizer import TERM


def bm25(
    postings: list[Posting],
    collection: tuple[int, int],
    holding: dict[str, int],
    weights: dict[str, float],
    tuning: SearchTuning,
) -> dict[int, float]:
    """Each page's BM25 score over `postings`, with the namespace's pages and total characters,
    each stem on `holding` pages, each stem's part times its weight.

    The inverse document frequency is Lucene's, log(1 + (N - n + 0.5) / (n + 0.5)), which stays
    positive: FTS5's floors at 1e-6 a term on more than half the pages, so that in a namespace of
    one to three pages every score was about 1e-6 and their order arbitrary.
    """
    pages, chars = collection
    average = max(1.0, chars / max(1, pages))
    k1, b = tuning.bm25_k1, tuning.bm25_b
    scores: dict[int, float] = defaultdict(float)
    for row in postings:
        found = holding[row["stem"]]
        idf = math.log(1 + (pages - found + 0.5) / (found + 0.5))
        tf = row["tf"]
        norm = k1 * (1 - b + b * row["chars"] / average)
        scores[row["rowid"]] += weights.get(row["stem"], 1.0) * idf * tf * (k1 + 1) / (tf + norm)
    return scores


def ideal_score(
    pages: int, holding: dict[str, int], weights: dict[str, float], tuning: SearchTuning
) -> float:
    """The BM25 score of a page holding each of the query's stems once at the saturation ceiling:
    the sum of their weighted inverse document frequencies times (k1 + 1). A stem no page holds
    counts too, at its highest: a query whose rare words nothing holds is covered by no page."""
    return sum(
        weight * math.log(1 + (pages - holding.get(stem, 0) + 0.5) / (holding.get(stem, 0) + 0.5))
        for stem, weight in weights.items()
    ) * (tuning.bm25_k1 + 1)


# Pronouns that make a query about one side of the conversation (see SearchTuning.role_boost).
_FIRST_PERSON = frozenset(["i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"])
_SECOND_PERSON = frozenset(
    ["you", "your", "yours", "yourself", "yourselves", "you're", "you've", "you'd", "you'll"]
)
_WORD = re.compile(r"[a-z']+")


def addressed_role(query: str) -> Role | None:
    """The role a query asks about by its pronouns: the user for "my", the assistant for "you"."""
    words = set(_WORD.findall(query.lower().replace("\u2019", "'")))
    first, second = bool(words & _FIRST_PERSON), bool(words & _SECOND_PERSON)
    if first == second:
        return None
    return Role.USER if first else Role.ASSISTANT


def rescore(
    candidates: list[Row],
    bm25: dict[int, float],
    tuning: SearchTuning,
    *,
    terms: list[str],
    role: Role | None,
    when: tuple[float, float] | None,
) -> dict[int, float]:
    """Each candidate's BM25 score with the bonuses of `tuning` (see SearchTuning for why each helps)."""
    session_best: dict[str, float] = {}
    for row in candidates:
        session_best[row["session"]] = max(session_best.get(row["session"], 0.0), bm25[row["rowid"]])
    asked = set(terms)
    scores = {}
    for row in candidates:
        around = sum(
            tuning.neighbour_decay ** (step - 1)
            * (bm25.get(row[f"before{step}"], 0.0) + bm25.get(row[f"after{step}"], 0.0))
            for step in range(1, tuning.neighbour_reach + 1)
        )
        standalone = min(1.0, tuning.context_tokens / max(1, row["tokens_full"]))
        score = bm25[row["rowid"]] + tuning.neighbour_weight * standalone * around
        speaker = TERM.findall((row["speaker"] or "").lower())
        if speaker and asked.issuperset(speaker):
            score *= 1 + tuning.speaker_boost
        if role is not None and row["role"] == role.value:
            score *= 1 + tuning.role_boost
        if when is not None and when[0] <= row["created_at"] < when[1]:
            score *= 1 + tuning.time_boost
        scores[row["rowid"]] = score + tuning.session_weight * session_best[row["session"]]
    return scores
