"""The full-text index's tokenizer: how a text becomes the terms the index stores.

FTS5's unicode61 tokenizer with porter stemming, run on a private in-memory table, so that every
backend indexes and looks up exactly the stems SQLite's index holds: the PostgreSQL backend
counts a page's stems with it when the page is written, and search turns a query's words into
stems with it.
"""

import re
import sqlite3
import threading
from collections.abc import Iterable

# The full-text index's tokenizer, used by the migration that builds it and by the stemmer here.
TOKENIZE = "porter unicode61 remove_diacritics 2"

# Words as unicode61 sees them: letters, digits and marks; everything else separates terms.
TERM = re.compile(r"[^\W_]+", re.UNICODE)


def match_expression(terms: Iterable[str]) -> str:
    """An FTS5 query that ORs each term as a quoted string: no operator survives quoting."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


# Pages counted on one scratch table before it is made anew (see Stemmer.frequencies).
_TEXTS_PER_TABLE = 2_000


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
        self._new_texts()
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
        self, texts: list[tuple[int, str, str | None, str | None]], stems: list[str] | None = None
    ) -> list[tuple[int, str, int]]:
        """(rowid, stem, occurrences) of `stems` (all of them when None: what an index other than
        FTS5's own stores) in pages' (rowid, content, speaker, key) texts."""
        wanted = "" if stems is None else f"WHERE term IN ({', '.join('?' * len(stems))})"
        with self._lock:
            try:
                self._conn.executemany(
                    "INSERT INTO texts (rowid, content, speaker, search_key) VALUES (?, ?, ?, ?)", texts
                )
                return [
                    (int(doc), str(stem), int(tf))
                    for doc, stem, tf in self._conn.execute(
                        f"SELECT doc, term, count(*) FROM text_terms {wanted} GROUP BY doc, term", stems or ()
                    )
                ]
            finally:
                self._conn.execute("DELETE FROM texts")
                # An FTS5 table keeps what is deleted from it in its index until segments merge,
                # and reading its vocabulary walks all of it: a count took 45 ms once 10,000 pages
                # had passed through, 1 ms on a new table. So it is made anew now and then.
                self._texts_seen += len(texts)
                if self._texts_seen > _TEXTS_PER_TABLE:
                    self._conn.execute("DROP TABLE text_terms")
                    self._conn.execute("DROP TABLE texts")
                    self._new_texts()

    def _new_texts(self) -> None:
        self._texts_seen = 0
        self._conn.execute(
            f"CREATE VIRTUAL TABLE texts USING fts5(content, speaker, search_key, tokenize='{TOKENIZE}')"
        )
        self._conn.execute("CREATE VIRTUAL TABLE text_terms USING fts5vocab(texts, instance)")

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
