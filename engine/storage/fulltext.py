"""The full-text index, as each backend offers it to search: a typed interface, so that search
asks the transaction's backend (`Dialect.fulltext`) and never picks a module by name.

SQLite answers from FTS5 (fulltext_sqlite.py), PostgreSQL from the postings memvm writes
(fulltext_postgres.py); both count the same stems the same way, so BM25 comes out the same.
"""

from dataclasses import dataclass
from typing import Any, Protocol

from memvm.engine.storage.api import Reads
from memvm.engine.storage.tokenizer import Stemmer

# One page's occurrences of one stem: rowid, stem, tf, chars, type, modality, session, pinned,
# project (without a stem where only the pages are asked for).
Posting = dict[str, Any]


@dataclass(frozen=True)
class Candidates:
    """Pages a search ranks: those holding all (`every`) or any of `terms`, none older than
    `floor` (a rowid); `rowids` are they."""

    terms: list[str]
    every: bool
    floor: int
    rowids: list[int]


class FullText(Protocol):
    async def capped_counts(
        self, conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, whole_file: bool, cap: int
    ) -> list[int]:
        """Each term's page count in the namespace, counted no further than `cap`, in one trip."""

    async def newest_counts(
        self, conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, cap: int, whole_file: bool
    ) -> list[tuple[int, int | None]]:
        """Each term's page count counted no further than `cap`, and, when it reaches `cap`, the
        oldest of the newest `cap` pages holding it."""

    async def newest_holding(
        self, conn: Reads, namespace: str, terms: list[str], stemmer: Stemmer, count: int
    ) -> list[Posting]:
        """The namespace's newest `count` pages holding every one of `terms`."""

    async def holding_among(
        self, conn: Reads, namespace: str, term: str, stemmer: Stemmer, among: Candidates
    ) -> set[int]:
        """Which of the pages `among` hold `term`."""

    async def postings(
        self,
        conn: Reads,
        namespace: str,
        terms: list[str],
        stems: list[str],
        stemmer: Stemmer,
        *,
        whole_file: bool,
    ) -> list[Posting]:
        """One posting per page and stem of `terms`."""
