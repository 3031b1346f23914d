"""The four levels of a page, computed once, at write time.

0 full: the content as given. 1 reduced: extractive, about a third of the tokens. 2 abstract: a
caller's summary or an extractive lead, at most `abstract_max_tokens`. 3 reference:
`[type/role] hint`, at most `reference_max_tokens`. A level is never longer than the one below it,
so moving to a coarser level always frees tokens (or costs nothing).
"""

import re
from collections import Counter
from dataclasses import dataclass

from memvm.engine.models.pages import LevelTokens, PageType, Role
from memvm.engine.paging.stopwords import STOPWORDS
from memvm.engine.paging.tokens import TokenCounter

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_WORD = re.compile(r"[\w'\u2019-]+", re.UNICODE)
_SPACE = re.compile(r"\s+")
# Below this size a page is kept whole at level 1: cutting it would save almost nothing.
_REDUCE_FROM_TOKENS = 60
_HINT_WORDS = 8
# Words that turn what follows into its opposite. They are stopwords for search, but a hint that
# dropped them would flip its meaning ("John is not allergic to peanuts" -> "John allergic
# peanuts"): a coarser level may lose detail, never invert it.
_NEGATIONS = frozenset(
    ["not", "no", "never", "nor", "none", "without", "cannot", "nothing", "nobody", "neither", "nowhere"]
)


@dataclass(frozen=True)
class Levels:
    texts: tuple[str, str, str, str]
    tokens: LevelTokens


def compute_levels(
    content: str,
    *,
    page_type: PageType,
    role: Role | None,
    summary: str | None,
    counter: TokenCounter,
    abstract_max_tokens: int,
    reference_max_tokens: int,
    full_tokens: int | None = None,
) -> Levels:
    """The four levels of `content`; `full_tokens`, its token count when the caller has it."""
    full = content
    full_tokens = counter.count(full) if full_tokens is None else full_tokens
    reduced = _reduce(full, full_tokens, counter)
    abstract = _abstract(summary or reduced, counter, abstract_max_tokens)
    reference = _reference(abstract, page_type, role, counter, reference_max_tokens)
    texts = [full, reduced, abstract, reference]
    counts = [full_tokens, counter.count(reduced), counter.count(abstract), counter.count(reference)]
    # A caller's summary, or the "[type/role]" label, can outgrow a tiny page: fall back to the
    # finer text, so that every level costs at most what the one below it costs.
    for level in (1, 2, 3):
        if counts[level] > counts[level - 1]:
            texts[level], counts[level] = texts[level - 1], counts[level - 1]
    return Levels(
        texts=(texts[0], texts[1], texts[2], texts[3]),
        tokens=LevelTokens(full=counts[0], reduced=counts[1], abstract=counts[2], reference=counts[3]),
    )


def is_negation(word: str) -> bool:
    """Whether `word` negates what it governs: not, no, never, ..., and the n't forms."""
    lowered = word.lower().replace("\u2019", "'")
    return lowered in _NEGATIONS or lowered.endswith("n't")


def collapse(text: str) -> str:
    """Text on one line: runs of white space become one space."""
    return _SPACE.sub(" ", text).strip()


def _sentences(text: str) -> list[str]:
    return [s for s in (collapse(part) for part in _SENTENCE_END.split(text)) if s]


def _keywords(text: str) -> Counter[str]:
    return Counter(w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS and len(w) > 2)


def _reduce(text: str, tokens: int, counter: TokenCounter) -> str:
    """Keep the sentences that carry the page's most frequent words, in their order, to ~1/3."""
    if tokens <= _REDUCE_FROM_TOKENS:
        return text
    target = max(_REDUCE_FROM_TOKENS // 2, tokens // 3)
    sentences = _sentences(text)
    if len(sentences) <= 1:
        return counter.truncate(collapse(text), target)
    weights = _keywords(text)

    def score(index: int) -> float:
        words = [w.lower() for w in _WORD.findall(sentences[index])]
        density = sum(weights[w] for w in words) / (len(words) + 1)
        # The opening sentence usually says what the page is about.
        return density * (1.5 if index == 0 else 1.0)

    chosen: set[int] = set()
    used = 0
    for index in sorted(range(len(sentences)), key=score, reverse=True):
        cost = counter.count(sentences[index]) + 1
        if used + cost > target:
            continue
        chosen.add(index)
        used += cost
    if not chosen:
        return counter.truncate(sentences[0], target)
    return " ".join(sentences[i] for i in sorted(chosen))


def _abstract(text: str, counter: TokenCounter, max_tokens: int) -> str:
    lead = collapse(text)
    return counter.truncate(lead, max_tokens)


def _reference(
    abstract: str, page_type: PageType, role: Role | None, counter: TokenCounter, max_tokens: int
) -> str:
    label = f"[{page_type.value}/{role.value}]" if role else f"[{page_type.value}]"
    words = _WORD.findall(abstract)
    content_words = [w for w in words if w.lower() not in STOPWORDS or is_negation(w)] or words
    hint = " ".join(content_words[:_HINT_WORDS])
    return counter.truncate(f"{label} {hint}".strip(), max_tokens)
