"""PostgreSQL's postings: each page's stems and their counts in page_terms, and its searchable
length, computed with FTS5's own tokenizer so that both backends hand search the same counts. The
one place both the engine's writes (postgres_db.Writes.flush) and an import's rebuild index a page.
"""

from collections.abc import Sequence
from typing import Any

from memvm.engine.storage.tokenizer import Stemmer

# What indexing reads of a page, and writes for it (see index_rows).
SEARCHED_TEXTS = "SELECT rowid, namespace, content, speaker, search_key FROM page_search"
SET_SEARCH_CHARS = "UPDATE pages SET search_chars = ? WHERE rowid = ?"
INSERT_TERMS = "INSERT INTO page_terms (namespace, stem, page_rowid, tf) VALUES (?, ?, ?, ?)"


def index_rows(
    texts: Sequence[Any], stemmer: Stemmer
) -> tuple[list[tuple[int, int]], list[tuple[str, str, int, int]]]:
    """For pages' (rowid, namespace, content, speaker, search_key), as SEARCHED_TEXTS reads them:
    their searchable lengths (SET_SEARCH_CHARS rows) and their stems' counts (INSERT_TERMS rows),
    as SQLite's triggers and FTS5 index hold them. The one place both the engine's writes and an
    import's rebuild index a page."""
    lengths = [(len(r[2]) + len(r[3] or "") + len(r[4] or ""), int(r[0])) for r in texts]
    namespaces = {int(r[0]): str(r[1]) for r in texts}
    counted = stemmer.frequencies([(int(r[0]), r[2], r[3], r[4]) for r in texts])
    return lengths, [(namespaces[rowid], stem, rowid, tf) for rowid, stem, tf in counted]
