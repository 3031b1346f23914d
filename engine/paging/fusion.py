"""One ranking from two kinds of evidence: a page's words (BM25 with search's bonuses) and its
meaning (the cosine of its vector and the query's).

The two are on different scales, and neither's raw value says the same from one query to the
next, so each is put on a scale of its own query first:
- words count as a share of the query's best words score (1 for the best page);
- meaning counts by how far a page's cosine stands out among the query's nearest pages, in
  standard deviations (z). An answer asked for in other words stands out from the crowd of pages
  on the same subject; a cosine that does not stand out is the crowd, whatever its value.
A page's fused score is its words share, raised by `meaning_bonus` times its z where meaning
agrees with the words, plus a weight times how far its z rises above `meaning_threshold`. Only a
page whose z is past the threshold is found by meaning.

How much meaning weighs depends on how well words alone answer: a query whose best page holds
most of its words (BM25's score against that of a page holding all of them: its coverage) is
answered by its words, and a page found by meaning alone should not push those aside; a query
whose words barely match anything (a question in other words: "Do I have any pets?" against "we
adopted a beagle") is answered by meaning. The weight goes from `meaning_weight` down to
`meaning_weight_covered` as the coverage rises from `covered_from` to `covered_at`. Such a query's
answer stands out less, too (it shares the subject of the notes its words match), so below
`uncovered_below` a page is found by meaning from `meaning_threshold_uncovered`, the threshold
rising to `meaning_threshold` at `uncovered_until`.

Standing out is relative, so it says nothing of a query about nothing the namespace holds: its
nearest page still stands out of a crowd that is farther still. A page is found by meaning only if
its cosine reaches `meaning_min_cosine` as well; one that does not is at most listed for being near.

A page that does not stand out that far but is still nearer than most (past `meaning_floor`) is
listed after every page found otherwise, nearest first: a search whose words find few pages (a
small namespace, a question in other words) still returns the pages nearest it by meaning, where
it would return fewer pages than asked for or none.

Few pages say little about the crowd: where the namespace has fewer than `meaning_depth` pages,
the rest are taken to be as an unrelated page is on average (PRIOR_MEAN, PRIOR_SPREAD, measured
on the development data), so that a namespace of five notes still finds its answer by meaning.
The settings were chosen by cross-validation (tests/bench/fusion_tuning.py).
"""

import math
from typing import Literal

from memvm.engine.config import SearchTuning

Evidence = Literal["words", "meaning", "both"]

# The cosines of a query's nearest 100 pages on the development data: mean 0.15 to 0.31 by
# dataset, spread 0.069 on each (all-MiniLM-L6-v2).
PRIOR_MEAN = 0.15
PRIOR_SPREAD = 0.07
# A page listed only for being near the query scores its cosine times this: below any page that
# stands out by meaning (which scores this at least) and any found by its words (whose scores are
# shares of the best, which would need to be a thousand times better to sink this low).
LISTED_AFTER = 1e-3


def standing(cosines: dict[int, float], depth: int) -> dict[int, float]:
    """Each page's cosine in standard deviations above the mean of the `depth` nearest (the
    missing ones, in a smaller namespace, counted at the prior)."""
    if not cosines:
        return {}
    values = sorted(cosines.values(), reverse=True)[:depth]
    missing = max(0, depth - len(values))
    count = len(values) + missing
    mean = (sum(values) + missing * PRIOR_MEAN) / count
    spread = (
        sum((value - mean) ** 2 for value in values) + missing * (PRIOR_SPREAD**2 + (PRIOR_MEAN - mean) ** 2)
    ) / count
    deviation = math.sqrt(spread) or PRIOR_SPREAD
    return {rowid: (cosine - mean) / deviation for rowid, cosine in cosines.items()}


def _ramp(coverage: float, low: float, high: float) -> float:
    """0 below `low`, 1 from `high`, and in proportion between."""
    return min(1.0, max(0.0, (coverage - low) / (high - low))) if high > low else float(coverage >= high)


def meaning_weight(coverage: float, tuning: SearchTuning) -> float:
    """What meaning weighs for a query whose best page covers `coverage` of its words."""
    share = _ramp(coverage, tuning.covered_from, tuning.covered_at)
    return tuning.meaning_weight + (tuning.meaning_weight_covered - tuning.meaning_weight) * share


def meaning_threshold(coverage: float, tuning: SearchTuning) -> float:
    """How far a page must stand out to be found by meaning, for a query whose best page covers
    `coverage` of its words: less where the words barely match (a question in other words)."""
    share = _ramp(coverage, tuning.uncovered_below, tuning.uncovered_until)
    low = min(tuning.meaning_threshold_uncovered, tuning.meaning_threshold)
    return low + (tuning.meaning_threshold - low) * share


def fuse(
    by_words: dict[int, float], by_meaning: dict[int, float], tuning: SearchTuning, *, words_ideal: float
) -> tuple[dict[int, float], dict[int, Evidence]]:
    """Each page's fused score, and what found it. `by_words` maps rowids to words scores,
    `by_meaning` the query's nearest pages (at most `meaning_depth`) to their cosines, and
    `words_ideal` is what a page holding every word of the query would score by its words."""
    best = max(by_words.values(), default=0.0)
    coverage = best / words_ideal if words_ideal > 0 else 0.0
    weight = meaning_weight(coverage, tuning)
    threshold = meaning_threshold(coverage, tuning)
    stands = standing(by_meaning, tuning.meaning_depth)
    scores: dict[int, float] = {}
    evidence: dict[int, Evidence] = {}
    for rowid in by_words.keys() | stands.keys():
        z = stands.get(rowid, 0.0)
        meant = z > threshold and by_meaning.get(rowid, -1.0) >= tuning.meaning_min_cosine
        if rowid in by_words:
            words = max(0.0, by_words[rowid]) / best if best > 0 else 0.0
            scores[rowid] = words * (1 + tuning.meaning_bonus * max(0.0, z))
            evidence[rowid] = "both" if meant else "words"
        elif meant:
            scores[rowid] = LISTED_AFTER  # above every page listed for being near alone
            evidence[rowid] = "meaning"
        elif z > tuning.meaning_floor:
            # Near, without standing out: listed after every page found otherwise, nearest first.
            scores[rowid] = LISTED_AFTER * by_meaning[rowid]
            evidence[rowid] = "meaning"
        else:
            continue
        if meant:
            scores[rowid] += weight * (z - threshold)
    return scores, evidence


def merely_near(matched: str | None, score: float) -> bool:
    """Whether a search hit was listed only for being near the query by meaning, after the others:
    what a list asked for may show, and what context put before a model unasked should not."""
    return matched == "meaning" and score < LISTED_AFTER
