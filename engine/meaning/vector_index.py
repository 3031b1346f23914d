"""Each namespace's vectors, copied into this process's memory, and the pages nearest a query.

A copy is brought up to date inside the search's own read transaction, so it sees what the search
sees: the vectors written since the copy was last read (by `seq`, which is never reused) are
appended; if the namespace then holds fewer than the copy (a page forgotten, expired or rewritten),
the copy is read again whole. Pages the copy still holds but the database no longer does cannot be
returned anyway: a search reads each candidate's page back, and a gone page is not there.

Scoring is exact up to `APPROXIMATE_ABOVE` vectors in a namespace: one matrix product over them
(about 25 ms at 100,000 on one core), off the event loop when the namespace is large. Above it, a
graph (see graph.py) is built on a background thread while exact scoring goes on; once built, the
graph's candidates and the vectors written since it last grew are scored exactly. The graph is
kept up with the copy in the background: new vectors added, gone ones dropped; while it holds
more gone vectors than a search wants, that search scores every vector.
"""

import logging
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import anyio
import numpy as np
import numpy.typing as npt
from memvm.engine.meaning.graph import Graph
from memvm.engine.meaning.model_files import DIMENSIONS
from memvm.engine.meaning.priority import lower_priority
from memvm.engine.meaning.vector_store import extent, written_after
from memvm.engine.storage.api import Reads

logger = logging.getLogger("memvm.meaning")

# Below this many vectors the product takes about a millisecond: a thread would cost more.
_IN_THREAD_FROM = 20_000

# Above this many vectors in a namespace, its nearest are found through a graph. At 100,000 exact
# scoring keeps search with meaning within twice the time of search by words; at a million it
# would take most of half a second.
APPROXIMATE_ABOVE = 100_000

# The graph compares int8 vectors: near ties can change places. Scoring more candidates than are
# wanted exactly puts them back in order (at 300 nearly alike vectors, asking for the 10 wanted
# kept .94 of the exact 10; asking for 64 kept them all).
_FEWEST_CANDIDATES = 64

# Vectors written since the graph last grew are scored exactly; this many make it grow again.
GROW_FROM = 10_000


@dataclass
class _Copy:
    seqs: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rowids: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    matrix: npt.NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, DIMENSIONS), dtype=np.float32)
    )
    size: int = 0
    last_seq: int = 0
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    def append(self, batch: list[tuple[int, int, bytes]]) -> None:
        """Append (seq, rowid, vector) rows. Rows below `size` are never written again, and a
        grown copy gets new arrays: a view of the first `size` rows stays as it was."""
        needed = self.size + len(batch)
        if needed > len(self.rowids):
            room = max(needed, 2 * len(self.rowids), 256)
            self.seqs = np.resize(self.seqs, room)
            self.rowids = np.resize(self.rowids, room)
            grown = np.zeros((room, DIMENSIONS), dtype=np.float32)
            grown[: self.size] = self.matrix[: self.size]
            self.matrix = grown
        block = np.frombuffer(b"".join(vector for _, _, vector in batch), dtype=np.float32)
        self.seqs[self.size : needed] = [seq for seq, _, _ in batch]
        self.rowids[self.size : needed] = [rowid for _, rowid, _ in batch]
        self.matrix[self.size : needed] = block.reshape(len(batch), DIMENSIONS)
        self.size = needed
        self.last_seq = batch[-1][0]


@dataclass
class _Upkeep:
    """A namespace's graph (None until first built) and whether work on it is under way."""

    graph: Graph | None = None
    busy: bool = False
    broken: bool = False  # building failed: this process scores the namespace exactly


class VectorIndex:
    """The copies of one database's vectors of one model, by namespace, and their graphs."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.approximate_above = APPROXIMATE_ABOVE
        self.grow_from = GROW_FROM
        self._copies: dict[str, _Copy] = {}
        self._upkeep: dict[str, _Upkeep] = {}
        self._stop = threading.Event()
        self._background: ThreadPoolExecutor | None = None  # started when a graph is first wanted

    def in_graph(self, namespace: str) -> int | None:
        """How many vectors `namespace`'s graph holds; None while its nearest are scored exactly."""
        copy = self._copies.get(namespace)
        graph = None if copy is None else self._graph_for(namespace, copy)
        return None if graph is None else len(graph.keys)

    def _wants_graph(self, copy: _Copy) -> bool:
        return copy.size > self.approximate_above and not self._stop.is_set()

    def _graph_for(self, namespace: str, copy: _Copy) -> Graph | None:
        """The graph to search `copy` through: None while every vector is scored."""
        upkeep = self._upkeep.get(namespace)
        return upkeep.graph if upkeep is not None and self._wants_graph(copy) else None

    def close(self) -> None:
        """Stop building graphs (within a chunk of work); searches after this are exact."""
        self._stop.set()
        if self._background is not None:
            self._background.shutdown(wait=False, cancel_futures=True)

    async def nearest(
        self, conn: Reads, namespace: str, query: npt.NDArray[np.float32], k: int
    ) -> dict[int, float]:
        """The `k` pages of `namespace` whose vectors are nearest `query`: rowid -> cosine."""
        copy = await self._current(conn, namespace)
        if copy.size == 0:
            return {}
        graph = self._graph_for(namespace, copy)
        if graph is not None:
            chosen = await _candidates(copy, graph, query, k)
            if chosen is not None:
                return _best(copy, chosen, copy.matrix[chosen] @ query, k)
        matrix = copy.matrix[: copy.size]
        if copy.size >= _IN_THREAD_FROM:
            similarities = await anyio.to_thread.run_sync(np.matmul, matrix, query)
        else:
            similarities = matrix @ query
        return _best(copy, np.arange(copy.size), similarities, k)

    async def _current(self, conn: Reads, namespace: str) -> _Copy:
        copy = self._copies.setdefault(namespace, _Copy())
        async with copy.lock:
            count, last = await extent(conn, namespace, self.model)
            if count != copy.size or last != copy.last_seq:
                if last > copy.last_seq:
                    await self._read(conn, namespace, copy)
                if copy.size != count:  # vectors went (a page forgotten, expired, rewritten): read it whole
                    copy = self._copies[namespace] = _Copy(lock=copy.lock)
                    await self._read(conn, namespace, copy)
            self._keep_up(namespace, copy)
            return copy

    async def _read(self, conn: Reads, namespace: str, copy: _Copy) -> None:
        """Append the vectors written since the copy's last."""
        async for batch in written_after(conn, namespace, self.model, copy.last_seq):
            copy.append(batch)

    def _keep_up(self, namespace: str, copy: _Copy) -> None:
        """Start building or growing the namespace's graph, when it is wanted and nothing is under way."""
        if not self._wants_graph(copy):
            return
        upkeep = self._upkeep.setdefault(namespace, _Upkeep())
        if upkeep.busy or upkeep.broken:
            return
        seqs, matrix = copy.seqs[: copy.size], copy.matrix[: copy.size]
        if upkeep.graph is not None:
            held, gone = _held(seqs, upkeep.graph)
            if not gone and copy.size - held < self.grow_from:
                return
        if self._background is None:
            self._background = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="memvm-graph", initializer=lower_priority
            )
        upkeep.busy = True
        self._step(upkeep, _growth(upkeep, namespace, seqs, matrix))

    def _step(self, upkeep: _Upkeep, steps: Iterator[None]) -> None:
        """Run the next step of `steps` on the background thread, and the one after when it ends.

        One step at a time, each a new task: once the executor is shut down (by `close`, or by the
        interpreter as it exits, which otherwise waits for a running task to end), the next task
        is refused and a graph's work ends within one chunk, not at the end of its build."""
        assert self._background is not None

        def next_step() -> bool:
            return not self._stop.is_set() and next(steps, _DONE) is not _DONE

        try:
            work = self._background.submit(next_step)
        except RuntimeError:  # shut down
            upkeep.busy = False
            return
        work.add_done_callback(lambda done: self._stepped(upkeep, steps, done))

    def _stepped(self, upkeep: _Upkeep, steps: Iterator[None], done: "Future[bool]") -> None:
        if done.cancelled():
            upkeep.busy = False
        elif done.exception() is not None:
            upkeep.broken = True
            upkeep.busy = False
            logger.error("a graph could not be built; searches score every vector", exc_info=done.exception())
        elif done.result():
            self._step(upkeep, steps)
        else:
            upkeep.busy = False


_DONE = object()


def _held(seqs: npt.NDArray[np.int64], graph: Graph) -> tuple[int, int]:
    """How many of the copy's vectors the graph holds (they come first: seqs ascend), and how many
    the graph holds that the copy no longer has."""
    keys = graph.keys  # read once: the background thread may replace it meanwhile
    held = int(np.searchsorted(seqs, keys[-1], side="right")) if len(keys) else 0
    return held, len(keys) - held


async def _candidates(
    copy: _Copy, graph: Graph, query: npt.NDArray[np.float32], k: int
) -> npt.NDArray[np.intp] | None:
    """Positions in the copy worth scoring exactly: the graph's candidates still in the copy, and
    the vectors the graph does not hold yet. None while the graph holds too many gone vectors."""
    seqs = copy.seqs[: copy.size]
    held, gone = _held(seqs, graph)
    if gone > k:
        return None
    keys = await anyio.to_thread.run_sync(graph.candidates, query, max(2 * k, _FEWEST_CANDIDATES) + gone)
    positions = np.searchsorted(seqs[:held], keys)
    inside = positions < held
    positions, keys = positions[inside], keys[inside]
    positions = positions[seqs[positions] == keys]
    return np.concatenate((positions, np.arange(held, len(seqs))))


def _best(
    copy: _Copy, positions: npt.NDArray[np.intp], similarities: npt.NDArray[np.float32], k: int
) -> dict[int, float]:
    k = min(k, len(positions))
    if k == 0:
        return {}
    best = np.argpartition(-similarities, k - 1)[:k]
    return {int(copy.rowids[positions[i]]): float(similarities[i]) for i in best}


def _growth(
    upkeep: _Upkeep, namespace: str, seqs: npt.NDArray[np.int64], matrix: npt.NDArray[np.float32]
) -> Iterator[None]:
    """Build the namespace's graph, or bring it up to the copy, in steps (see VectorIndex._step)."""
    graph = upkeep.graph
    if graph is None:
        started = time.perf_counter()
        graph = Graph(threads=os.cpu_count() or 1)
        yield from graph.adding(seqs, matrix)
        upkeep.graph = graph
        logger.info(
            "namespace %r: %d vectors in a graph, built in %.0f s",
            namespace,
            len(seqs),
            time.perf_counter() - started,
        )
        return
    held, gone = _held(seqs, graph)
    if gone:
        graph.remove(np.setdiff1d(graph.keys, seqs[:held], assume_unique=True))
        yield
    yield from graph.adding(seqs[held:], matrix[held:])
