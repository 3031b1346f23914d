"""How words and meaning are fused into one ranking (paging/fusion.py), on scores made up to the
point: which pages are listed, in what order, and what each says found it."""

from dataclasses import replace

from memvm.engine.config import SearchTuning
from memvm.engine.paging.fusion import fuse, merely_near, standing

TUNING = SearchTuning()
# The crowd: a hundred pages about as near the query as any other page is.
CROWD = {100 + n: (0.15 if n % 2 else 0.25) for n in range(98)}
STANDS_OUT, MERELY_NEAR = 1, 2


def ranking(by_words, by_meaning, tuning=TUNING, ideal=10.0):
    scores, evidence = fuse(by_words, by_meaning, tuning, words_ideal=ideal)
    order = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))
    return [(rowid, evidence[rowid]) for rowid in order]


def test_the_crowd_is_left_out_and_a_page_merely_near_comes_after_the_others():
    by_meaning = {**CROWD, STANDS_OUT: 0.6, MERELY_NEAR: 0.32}
    z = standing(by_meaning, TUNING.meaning_depth)
    assert z[STANDS_OUT] > TUNING.meaning_threshold > z[MERELY_NEAR] > TUNING.meaning_floor
    assert max(z[rowid] for rowid in CROWD) < TUNING.meaning_floor
    # The query's words match one page, and weakly: a question in other words.
    found = ranking({7: 2.0}, by_meaning)
    assert found == [(STANDS_OUT, "meaning"), (7, "words"), (MERELY_NEAR, "meaning")]


def test_a_page_standing_out_by_meaning_stays_above_one_merely_near_when_words_cover_the_query():
    # The best page holds every word of the query, so meaning weighs nothing there (the weight
    # falls to meaning_weight_covered, 0): the page that stands out still comes before the page
    # listed only for being near.
    by_meaning = {**CROWD, STANDS_OUT: 0.6, MERELY_NEAR: 0.32}
    found = ranking({7: 10.0}, by_meaning, ideal=10.0)
    assert [rowid for rowid, _ in found] == [7, STANDS_OUT, MERELY_NEAR]


def test_a_floor_at_the_threshold_lists_no_page_for_being_near_alone():
    by_meaning = {**CROWD, STANDS_OUT: 0.6, MERELY_NEAR: 0.32}
    strict = replace(TUNING, meaning_floor=TUNING.meaning_threshold)
    assert ranking({7: 2.0}, by_meaning, strict) == [(STANDS_OUT, "meaning"), (7, "words")]


def test_a_page_found_by_both_says_so_and_ranks_above_words_alone():
    by_meaning = {**CROWD, STANDS_OUT: 0.6}
    found = ranking({STANDS_OUT: 5.0, 7: 5.0}, by_meaning, ideal=5.0)
    assert found[:2] == [(STANDS_OUT, "both"), (7, "words")]


def test_a_question_whose_words_barely_match_finds_a_page_standing_out_less():
    # A question in other words shares its subject with the notes its words match, so its answer
    # stands out less: past the lower threshold, not the full one.
    less = 3
    by_meaning = {**CROWD, less: 0.35}
    z = standing(by_meaning, TUNING.meaning_depth)[less]
    assert TUNING.meaning_threshold_uncovered < z < TUNING.meaning_threshold
    # The words match weakly (at most uncovered_below of what a page holding them all would
    # score): found by meaning, above the words' match.
    weak = 10.0 * TUNING.uncovered_below
    assert ranking({7: weak}, by_meaning) == [(less, "meaning"), (7, "words")]
    # The words cover more of the query (uncovered_until): the page is only listed for being near.
    covering = 10.0 * TUNING.uncovered_until
    assert ranking({7: covering}, by_meaning) == [(7, "words"), (less, "meaning")]


def test_a_page_that_stands_out_but_is_not_near_in_itself_is_only_listed():
    # A query about nothing in the namespace: its nearest page still stands out of a crowd that
    # is farther still, but its cosine is below the floor.
    far_crowd = {100 + n: (0.02 if n % 2 else 0.08) for n in range(98)}
    by_meaning = {**far_crowd, STANDS_OUT: TUNING.meaning_min_cosine - 0.05}
    assert standing(by_meaning, TUNING.meaning_depth)[STANDS_OUT] > TUNING.meaning_threshold
    assert ranking({7: 2.0}, by_meaning)[:2] == [(7, "words"), (STANDS_OUT, "meaning")]
    scores, _ = fuse({7: 2.0}, by_meaning, TUNING, words_ideal=10.0)
    assert merely_near("meaning", scores[STANDS_OUT])
    # Near enough in itself, the same page is found.
    by_meaning[STANDS_OUT] = TUNING.meaning_min_cosine + 0.05
    assert ranking({7: 2.0}, by_meaning)[0] == (STANDS_OUT, "meaning")
