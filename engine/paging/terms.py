"""Search terms: a query's words as the full-text index sees them, and their stems.

The index (FTS5's unicode61 tokenizer with porter stemming) splits on every character that is not
a letter or a digit, so "Melanie's" is indexed as "melanie" and "s", and "don't" as "don" and "t".
A query is split the same way, and the pieces a clitic leaves (the "s" of "Melanie's", the "t"
and the "don" of "don't") are dropped like stopwords: they are on nearly every page ("that's",
"let's"), and a query that asked for them would match them all. The index keeps them as
positions, never as something to find.
"""

import re
import sqlite3
import threading
from collections.abc import Iterable

from memvm.engine.paging.stopwords import STOPWORDS

# The full-text index's tokenizer, used by the migration that builds it and by the stemmer here.
TOKENIZE = "porter unicode61 remove_diacritics 2"

# Words as unicode61 sees them: letters, digits and marks; everything else separates terms.
TERM = re.compile(r"[^\W_]+", re.UNICODE)
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


def match_expression(terms: Iterable[str]) -> str:
    """An FTS5 query that ORs each term as a quoted string: no operator survives quoting."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


class Stemmer:
    """Terms as the full-text index stores them, by FTS5's own tokenizer on a private table.

    The index's term statistics are read term by term (pages_terms), so a query's words must be
    turned into the index's stems exactly; asking the tokenizer itself guarantees it.
    """

    _CACHE_LIMIT = 50_000

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{TOKENIZE}')")
        self._conn.execute("CREATE VIRTUAL TABLE stems USING fts5vocab(words, instance)")
        # Pages' texts, counted here as the index counts them (see postings).
        self._conn.execute(
            f"CREATE VIRTUAL TABLE texts USING fts5(content, speaker, search_key, tokenize='{TOKENIZE}')"
        )
        self._conn.execute("CREATE VIRTUAL TABLE text_terms USING fts5vocab(texts, instance)")
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, ...]] = {}

    def stems(self, terms: list[str]) -> list[str]:
        """The distinct stems of `terms`, in order (a term that is several tokens gives several)."""
        each = self.stem_each(terms)
        return list(dict.fromkeys(stem for term in terms for stem in each[term]))

    def stem_each(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        """Each distinct word's stems (a word that is several tokens has several)."""
        # Read before tokenizing: a full cache is emptied by _tokenize.
        known = {word: self._cache[word] for word in dict.fromkeys(words) if word in self._cache}
        missing = [word for word in dict.fromkeys(words) if word not in known]
        if missing:
            known.update(self._tokenize(missing))
        return known

    def frequencies(
        self, texts: list[tuple[int, str, str | None, str | None]], stems: list[str]
    ) -> list[tuple[int, str, int]]:
        """(rowid, stem, occurrences) of `stems` in pages' (rowid, content, speaker, key) texts."""
        marks = ", ".join("?" * len(stems))
        with self._lock:
            try:
                self._conn.executemany(
                    "INSERT INTO texts (rowid, content, speaker, search_key) VALUES (?, ?, ?, ?)", texts
                )
                return [
                    (int(doc), str(stem), int(tf))
                    for doc, stem, tf in self._conn.execute(
                        f"SELECT doc, term, count(*) FROM text_terms WHERE term IN ({marks}) GROUP BY doc, term",
                        stems,
                    )
                ]
            finally:
                self._conn.execute("DELETE FROM texts")

    def _tokenize(self, terms: list[str]) -> dict[str, tuple[str, ...]]:
        with self._lock:
            if len(self._cache) > self._CACHE_LIMIT:
                self._cache.clear()
            self._conn.executemany(
                "INSERT INTO words (rowid, word) VALUES (?, ?)", list(enumerate(terms, start=1))
            )
            found: dict[int, list[str]] = {}
            for doc, stem in self._conn.execute("SELECT doc, term FROM stems ORDER BY doc, offset"):
                found.setdefault(doc, []).append(stem)
            self._conn.execute("DELETE FROM words")
            stemmed = {term: tuple(found.get(index, ())) for index, term in enumerate(terms, start=1)}
            self._cache.update(stemmed)
        return stemmed

    def close(self) -> None:
        self._conn.close()
