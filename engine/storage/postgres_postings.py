"""PostgreSQL's postings: each page's stems and their counts in page_terms, and its searchable
length, computed with FTS5's own tokenizer so that both backends hand search the same counts. The
one place both the engine's writes (postgres_db.Writes.flush) and an import's rebuild index a page.
"""

from collections.abc import Sequence
from typing import Any

from memvm.engine.storage.statements import statement, template
from memvm.engine.storage.tokenizer import Stemmer

# What indexing reads of a page, and writes for it (see index_rows).
_SEARCHED = "SELECT rowid, namespace, content, speaker, search_key FROM page_search"
SEARCHED_TEXTS = statement("postgres_postings.searched texts", _SEARCHED, backend="postgresql")
SEARCHED_TEXTS_OF = template(
    "postgres_postings.searched texts of",
    _SEARCHED + " WHERE rowid IN ({marks})",
    backend="postgresql",
    marks=":in0",
)
DELETE_TERMS_OF = template(
    "postgres_postings.delete terms of",
    "DELETE FROM page_terms WHERE page_rowid IN ({marks})",
    backend="postgresql",
    marks=":in0",
)
SET_SEARCH_CHARS = statement(
    "postgres_postings.set search chars",
    "UPDATE pages SET search_chars = :chars WHERE rowid = :rowid",
    backend="postgresql",
)
INSERT_TERMS = statement(
    "postgres_postings.insert terms",
    "INSERT INTO page_terms (namespace, stem, page_rowid, tf) VALUES (:namespace, :stem, :page_rowid, :tf)",
    backend="postgresql",
)


def index_rows(
    texts: Sequence[Any], stemmer: Stemmer
) -> tuple[list[dict[str, int]], list[tuple[str, str, int, int]]]:
    """For pages' (rowid, namespace, content, speaker, search_key), as SEARCHED_TEXTS reads them:
    their searchable lengths (SET_SEARCH_CHARS rows) and their stems' counts (page_terms rows:
    namespace, stem, page_rowid, tf), as SQLite's triggers and FTS5 index hold them. The one place
    both the engine's writes and an import's rebuild index a page."""
    lengths = [{"chars": len(r[2]) + len(r[3] or "") + len(r[4] or ""), "rowid": int(r[0])} for r in texts]
    namespaces = {int(r[0]): str(r[1]) for r in texts}
    counted = stemmer.frequencies([(int(r[0]), r[2], r[3], r[4]) for r in texts])
    return lengths, [(namespaces[rowid], stem, rowid, tf) for rowid, stem, tf in counted]
