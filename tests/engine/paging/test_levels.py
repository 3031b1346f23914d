from hypothesis import given, settings
from hypothesis import strategies as st
from memvm.engine.models.pages import PageType, Role
from memvm.engine.paging.levels import compute_levels, is_negation
from memvm.engine.paging.tokens import TokenCounter

from tests.conftest import examples, long_text

COUNTER = TokenCounter()


def levels_of(content, summary=None, page_type=PageType.TRANSCRIPT, role=Role.USER):
    return compute_levels(
        content,
        page_type=page_type,
        role=role,
        summary=summary,
        counter=COUNTER,
        abstract_max_tokens=48,
        reference_max_tokens=16,
    )


def test_a_long_page_has_four_distinct_levels_within_their_sizes():
    levels = levels_of(long_text("dishwasher", 24))
    full, reduced, abstract, reference = levels.texts
    tokens = levels.tokens
    assert tokens.full > 300
    assert tokens.reduced <= tokens.full * 0.4
    assert tokens.abstract <= 48
    assert tokens.reference <= 16
    assert reference.startswith("[transcript/user]")
    assert len({full, reduced, abstract, reference}) == 4
    # Token counts are the exact counts of the stored texts.
    assert [COUNTER.count(t) for t in levels.texts] == [
        tokens.full,
        tokens.reduced,
        tokens.abstract,
        tokens.reference,
    ]


def test_a_callers_summary_becomes_the_abstract():
    levels = levels_of(long_text("router"), summary="Router review: launch moves to June, part on order.")
    assert levels.texts[2] == "Router review: launch moves to June, part on order."


def test_a_short_page_keeps_its_text_at_the_finer_levels():
    levels = levels_of("ok, thanks")
    assert levels.texts[0] == levels.texts[1] == "ok, thanks"
    assert levels.tokens.reference <= levels.tokens.abstract <= levels.tokens.full


@settings(max_examples=examples(60), deadline=None)
@given(
    content=st.text(min_size=1, max_size=3000),
    summary=st.one_of(st.none(), st.text(min_size=1, max_size=500)),
    page_type=st.sampled_from(list(PageType)),
)
def test_no_level_is_ever_longer_than_the_one_below_it(content, summary, page_type):
    tokens = levels_of(content, summary=summary, page_type=page_type, role=None).tokens
    assert tokens.full >= tokens.reduced >= tokens.abstract >= tokens.reference
    assert tokens.abstract <= 48
    assert tokens.reference <= 16


GOVERNED = {"allergic", "deployed", "sugar", "green", "approved", "peanuts", "tested"}
NEGATED = st.builds(
    lambda subject, negation, governed, rest: f"{subject} {negation} {governed} {rest}.",
    st.sampled_from(["John", "The build", "Our team", "Maria's cat", "This release"]),
    st.sampled_from(
        [
            "is not",
            "was never",
            "isn't",
            "doesn\u2019t",
            "did not",
            "has no",
            "can't",
            "goes without",
            "cannot",
        ]
    ),
    st.sampled_from(sorted(GOVERNED)),
    st.sampled_from(["to nuts", "on Fridays", "in the morning", "before the review", "at all"]),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    first=NEGATED,
    after=st.lists(st.sampled_from(long_text("harbour", 30).split(". ")), max_size=12),
    page_type=st.sampled_from(list(PageType)),
)
def test_a_coarser_level_never_drops_a_negation_and_keeps_what_it_governs(first, after, page_type):
    # The negated statement opens the page, so it reaches the abstract and the reference hint.
    content = " ".join([first, *(f"{sentence}." for sentence in after)])
    levels = levels_of(content, page_type=page_type, role=None)
    governed = next(word for word in first.split() if word in GOVERNED)
    for text in levels.texts[1:]:
        words = [word.strip(".,").lower().replace("\u2019", "'") for word in text.split()]
        if governed not in words:
            continue  # detail may be lost, never inverted
        before = words[: words.index(governed)]
        assert any(is_negation(word) for word in before), (first, text)
