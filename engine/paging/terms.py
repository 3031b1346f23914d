"""Search terms: a query's words as the full-text index sees them, and their stems.

The index (FTS5's unicode61 tokenizer with porter stemming) splits on every character that is not
a letter or a digit, so "Melanie's" is indexed as "melanie" and "s", and "don't" as "don" and "t".
A query is split the same way, and the pieces a clitic leaves (the "s" of "Melanie's", the "t"
and the "don" of "don't") are dropped like stopwords: they are on nearly every page ("that's",
"let's"), and a query that asked for them would match them all. The index keeps them as
positions, never as something to find.
"""

from memvm.engine.paging.stopwords import STOPWORDS
from memvm.engine.storage.tokenizer import TERM

MAX_TERMS = 32
_APOSTROPHES = "'\u2019\u02bc"
# What follows the apostrophe of a clitic: possessive or "is" ('s), not (n't), are, will, have,
# would or had, am.
_CLITICS = frozenset(["s", "t", "re", "ll", "ve", "d", "m"])


def words(text: str) -> list[str]:
    """The lower-cased words of `text` as the index splits it, without the pieces of clitics."""
    found = []
    for match in TERM.finditer(text):
        word = match.group().lower()
        start, end = match.start(), match.end()
        after_apostrophe = start > 0 and text[start - 1] in _APOSTROPHES
        if after_apostrophe and word in _CLITICS:
            continue
        if word.endswith("n") and _negated_auxiliary(text, end):
            continue
        found.append(word)
    return found


def _negated_auxiliary(text: str, end: int) -> bool:
    """Whether the word ending at `end` is the "don" of "don't" or the "isn" of "isn't"."""
    clitic = text[end : end + 2]
    return (
        len(clitic) == 2
        and clitic[0] in _APOSTROPHES
        and clitic[1] in "tT"
        and not text[end + 2 : end + 3].isalnum()
    )


def query_terms(text: str) -> list[str]:
    """The distinct, lower-cased, non-stopword terms of `text`, in order, at most 32."""
    seen: dict[str, None] = {}
    for term in words(text):
        if term not in STOPWORDS and term not in seen:
            seen[term] = None
    return list(seen)[:MAX_TERMS]
