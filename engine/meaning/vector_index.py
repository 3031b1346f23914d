"""Each namespace's vectors, copied into this process's memory, and the pages nearest a query.

A copy is brought up to date inside the search's own read transaction, so it sees what the search
sees: the vectors written since the copy was last read (by `seq`, which is never reused) are
appended; if the namespace then holds fewer than the copy (a page forgotten, expired or rewritten),
the copy is read again whole. Pages the copy still holds but the database no longer does cannot be
returned anyway: a search reads each candidate's page back, and a gone page is not there.

Scoring is exact: one matrix product over the namespace's vectors (about 25 ms at 100,000 on one
core), off the event loop when the namespace is large.
"""

from dataclasses import dataclass, field

import anyio
import numpy as np
import numpy.typing as npt
from memvm.engine.meaning.model_files import DIMENSIONS
from memvm.engine.meaning.vector_store import extent, written_after
from memvm.engine.storage.api import Reads

# Below this many vectors the product takes about a millisecond: a thread would cost more.
_IN_THREAD_FROM = 20_000


@dataclass
class _Copy:
    rowids: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: npt.NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, DIMENSIONS), dtype=np.float32)
    )
    size: int = 0
    last_seq: int = 0
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    def append(self, rowids: list[int], vectors: list[bytes]) -> None:
        needed = self.size + len(rowids)
        if needed > len(self.rowids):
            room = max(needed, 2 * len(self.rowids), 256)
            self.rowids = np.resize(self.rowids, room)
            grown = np.zeros((room, DIMENSIONS), dtype=np.float32)
            grown[: self.size] = self.matrix[: self.size]
            self.matrix = grown
        block = np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), DIMENSIONS)
        self.rowids[self.size : needed] = rowids
        self.matrix[self.size : needed] = block
        self.size = needed


class VectorIndex:
    """The copies of one database's vectors of one model, by namespace."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._copies: dict[str, _Copy] = {}

    async def nearest(
        self, conn: Reads, namespace: str, query: npt.NDArray[np.float32], k: int
    ) -> dict[int, float]:
        """The `k` pages of `namespace` whose vectors are nearest `query`: rowid -> cosine."""
        copy = await self._current(conn, namespace)
        if copy.size == 0:
            return {}
        rowids, matrix = copy.rowids[: copy.size], copy.matrix[: copy.size]
        if copy.size >= _IN_THREAD_FROM:
            similarities = await anyio.to_thread.run_sync(np.matmul, matrix, query)
        else:
            similarities = matrix @ query
        k = min(k, copy.size)
        best = np.argpartition(-similarities, k - 1)[:k]
        return {int(rowids[i]): float(similarities[i]) for i in best}

    async def _current(self, conn: Reads, namespace: str) -> _Copy:
        copy = self._copies.setdefault(namespace, _Copy())
        async with copy.lock:
            count, last = await extent(conn, namespace, self.model)
            if count == copy.size and last == copy.last_seq:
                return copy
            if last > copy.last_seq:
                await self._read(conn, namespace, copy)
            if copy.size != count:  # vectors went (a page forgotten, expired, rewritten): read it whole
                copy = self._copies[namespace] = _Copy(lock=copy.lock)
                await self._read(conn, namespace, copy)
            return copy

    async def _read(self, conn: Reads, namespace: str, copy: _Copy) -> None:
        """Append the vectors written since the copy's last."""
        async for batch in written_after(conn, namespace, self.model, copy.last_seq):
            copy.append([rowid for _, rowid, _ in batch], [vector for _, _, vector in batch])
            copy.last_seq = batch[-1][0]
