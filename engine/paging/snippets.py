"""Search snippets: a short run of a page's words around the query's terms, at a bounded cost.

FTS5's snippet() scores every fragment of the whole page, and its cost grows with the square of
a term's occurrences: three pages that repeat one word 40,000 times held one search for over
30 seconds. Here SQL hands over a bounded window of the text instead, placed at the first place
within the page's opening `SCAN_CHARS` where a query term (or its stem) appears, and the best run
of `SPAN_WORDS` words inside it is chosen in Python. Whatever a page holds, a snippet reads at most
`SCAN_CHARS` characters per term and stems at most `WINDOW_CHARS` characters of words.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass

from memvm.engine.storage.dialects import SqlDialect
from memvm.engine.storage.tokenizer import TERM, Stemmer

# How far into a page the first occurrence of a term is looked for (characters).
SCAN_CHARS = 100_000
# The text handed to Python: from a little before that occurrence, this many characters.
WINDOW_CHARS = 1_200
_LEAD_CHARS = 120
# Words in a snippet, as FTS5's snippet() was asked for.
SPAN_WORDS = 24
ELLIPSIS = "…"

# Where the window starts: the first place a searched string occurs in the page's opening, less a
# lead, or the page's start. `lower` folds ASCII only, which is enough to find where to look: the
# words of the window are then matched exactly, stem by stem.
_FIRST_AT = """(SELECT coalesce(min(nullif({find}, 0)), 1) FROM {strings})"""


def window_sql(text: str, dialect: SqlDialect) -> str:
    """Select-list SQL for the window of column `text`: `snippet_at` and `snippet_window`.

    It takes one parameter, `:searched`: the searched strings (`searched`).
    """
    first = _FIRST_AT.format(
        find=dialect.find(f"lower(substr({text}, 1, {SCAN_CHARS}))", "s.value"),
        strings=dialect.json_strings(":searched"),
    )
    start = dialect.greatest("1", f"{first} - {_LEAD_CHARS}")
    return f"{start} AS snippet_at, substr({text}, {start}, {WINDOW_CHARS}) AS snippet_window"


def searched(terms: Sequence[str], stems: Sequence[str]) -> str:
    """The strings the window is placed by, as the JSON array `window_sql` binds."""
    return json.dumps(list(dict.fromkeys([*terms, *stems])), ensure_ascii=False)


@dataclass(frozen=True)
class _Word:
    start: int
    end: int
    stems: tuple[str, ...]


def snippet(window: str, at: int, stems: Sequence[str], stemmer: Stemmer) -> str:
    """The best run of SPAN_WORDS words of `window` (which starts at character `at` of its page, from 1).

    The best run holds the most distinct query stems, the earliest such; with none, the window's
    first words. An ellipsis marks text left out before or after.
    """
    found = list(TERM.finditer(window))
    # A window cut from the middle of the page may begin or end inside a word.
    if at > 1 and found and found[0].start() == 0:
        found = found[1:]
    if len(window) >= WINDOW_CHARS and found and found[-1].end() == len(window):
        found = found[:-1]
    if not found:
        return ""
    lowered = [match.group().lower() for match in found]
    # Only a word that can stem to a query's stem is stemmed (most of a window's words cannot).
    heads = {_head(stem) for stem in stems}
    stemmed = stemmer.stem_each([word for word in lowered if _may_stem_to(word, heads)])
    words = [_Word(m.start(), m.end(), stemmed.get(word, ())) for m, word in zip(found, lowered, strict=True)]
    wanted = set(stems)
    first = _best_start(words, wanted)
    chosen = words[first : first + SPAN_WORDS]
    # The page's own first and last characters (quotes, a full stop) belong to the snippet.
    from_start = at == 1 and first == 0
    to_end = first + SPAN_WORDS >= len(words) and len(window) < WINDOW_CHARS
    text = window[0 if from_start else chosen[0].start : len(window) if to_end else chosen[-1].end]
    return ("" if from_start else ELLIPSIS) + text + ("" if to_end else ELLIPSIS)


def _head(word: str) -> str:
    """A word's first two characters as its stem keeps them.

    The Porter stemmer rewrites only a word's ending; the one rewrite that can reach its second
    character is a final y becoming i ("eyed" stems to "ei"), so y and i are the same here (checked
    against the stems of 117,000 English words).
    """
    return word[:2].replace("y", "i")


def _may_stem_to(word: str, heads: set[str]) -> bool:
    """Whether `word` (lower-cased) can have a stem whose head is in `heads`.

    A word with letters outside ASCII is always stemmed: the tokenizer folds diacritics first
    ("éclair" stems to "eclair"), which no test on the raw word could follow.
    """
    return not word.isascii() or _head(word) in heads or word[:1] in heads


def _best_start(words: list[_Word], wanted: set[str]) -> int:
    """The first word of the span: the run from each matching word on that holds the most distinct
    stems, earliest first, with its matches centred in the span as far as the text allows."""
    best, best_count = 0, 0
    last_start = max(0, len(words) - SPAN_WORDS)
    for index, word in enumerate(words):
        if not wanted.intersection(word.stems):
            continue
        matching = [
            i for i in range(index, min(index + SPAN_WORDS, len(words))) if wanted & set(words[i].stems)
        ]
        covered = {stem for i in matching for stem in words[i].stems} & wanted
        if len(covered) > best_count:
            spare = SPAN_WORDS - (matching[-1] - index + 1)
            best, best_count = min(max(0, index - spare // 2), last_start), len(covered)
            if best_count == len(wanted):
                break
    return best
