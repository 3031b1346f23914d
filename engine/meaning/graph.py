"""An approximate nearest-neighbour graph over one namespace's vectors (HNSW, from usearch).

Above a hundred thousand vectors, scoring every one for each query costs more than the search by
words it goes with (about 490 ms at a million on one core). The graph finds a query's neighbours
in a few milliseconds by visiting a small part of them; the caller scores the candidates exactly.

The graph is keyed by each vector's `seq` (see vector_store), which is never reused: a vector that
went (its page forgotten, expired or rewritten) leaves a key the caller no longer knows, and
drops it; a rewritten page comes back under a new key. Vectors are held as int8, a quarter of
their size (cosines within .002 of float32's), since they only choose candidates.

Building and growing happen on a thread of their own, a chunk at a time (see `adding`), so that a
search waits at most for one chunk and the work can end between two.
"""

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
from memvm.engine.meaning.model_files import DIMENSIONS

# Links per node, and the breadths explored when adding and searching. Measured at a million
# vectors made near real text embeddings (tests/bench/meaning_scale.py), candidates scored
# exactly: search breadth 4,096 keeps .88 of the exact 10 nearest (1,024 keeps .72) for about 10 ms
# a query on one core; 32 links and add breadth 128 keep .93 but take twice as long to build
# (190 s against 100 on two cores) and more memory.
_LINKS = 16
_ADD_BREADTH = 64
_SEARCH_BREADTH = 4_096

# Vectors added under one hold of the lock: about a fifth of a second of work on one core, the
# longest a search waits while the graph grows.
_CHUNK = 1_024


class Graph:
    """Safe to use from several threads: adding and removing hold the lock a chunk at a time."""

    def __init__(self, threads: int) -> None:
        self._index = _usearch_index()(
            ndim=DIMENSIONS,
            metric="cos",
            dtype="i8",
            connectivity=_LINKS,
            expansion_add=_ADD_BREADTH,
            expansion_search=_SEARCH_BREADTH,
        )
        self._threads = threads
        self._lock = threading.Lock()
        # The keys held, ascending (each addition's keys are above all before them).
        self.keys: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)

    def adding(self, keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> Iterator[None]:
        """Add vectors whose keys are above every key held, a chunk at each step (`keys` says what
        was added when the steps stop early)."""
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            with self._lock:
                self._index.add(chunk, vectors[start : start + _CHUNK], threads=self._threads)
                self.keys = np.concatenate((self.keys, chunk))
            yield

    def remove(self, keys: npt.NDArray[np.int64]) -> None:
        with self._lock:
            self._index.remove(keys)
            self.keys = np.setdiff1d(self.keys, keys, assume_unique=True)

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """The keys of about the `count` vectors nearest `query`."""
        with self._lock:
            if not len(self.keys):
                return np.zeros(0, dtype=np.int64)
            found = self._index.search(query, min(count, len(self.keys)), threads=1)
        return np.asarray(found.keys, dtype=np.int64)


def _usearch_index() -> Any:
    """usearch's Index class, imported when a graph is first wanted (most processes never want one).

    onnxruntime is imported first, on purpose: loaded after usearch's compiled module, its own
    crashes the process while it starts (a clash in the C++ runtime they both bring, seen with
    usearch 2.26 and onnxruntime 1.2x on Linux). The other way round, both work."""
    import onnxruntime  # noqa: F401  (see above)
    from usearch.index import Index

    return Index
