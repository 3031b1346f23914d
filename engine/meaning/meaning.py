"""Search by meaning for one engine: whether it is on, the encoder (loaded once per process, when
first needed, off the event loop), the in-process copies of the vectors, and why it is off when
it is.

When the model's files are missing or fail their digest, `unavailable` says so in one line, and
every search goes on by words alone: the tools, `memvm doctor` and the hooks repeat that line.
"""

import asyncio
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import anyio
import numpy as np
import numpy.typing as npt
from memvm.engine.meaning.encoder import MAX_PIECES, Encoder, Vectors, load
from memvm.engine.meaning.model_files import DIMENSIONS, MODEL_ID, OFF_BY_SETTING, ModelUnavailable, locate
from memvm.engine.meaning.priority import lower_priority
from memvm.engine.meaning.vector_index import VectorIndex

logger = logging.getLogger("memvm.meaning")

# The word pieces one task of the background thread embeds, about: four texts cut at the
# encoder's limit, or a few dozen short ones (which lose speed in smaller batches). The most an
# exit waits for: a fifth of a second on an idle core, seconds on a machine busy with other work.
_PIECES_PER_TASK = 4 * MAX_PIECES


class Meaning:
    def __init__(self, *, enabled: bool, model_folder: str | None) -> None:
        self.enabled = enabled
        self.model_id = MODEL_ID
        self.index = VectorIndex(MODEL_ID)
        self._folder = model_folder
        self._encoder: Encoder | None = None
        self._unavailable: str | None = None
        self._loading = anyio.Lock()
        # Pages are embedded on a thread of their own, at a lower priority than the threads that
        # answer requests: a busy machine serves first and embeds with what is left.
        self._background = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="memvm-embed", initializer=lower_priority
        )

    @property
    def why_off(self) -> str | None:
        """Why searches match words alone, in one line; None while meaning is on (or not yet tried)."""
        if not self.enabled:
            return OFF_BY_SETTING
        return self._unavailable

    async def encoder(self) -> Encoder | None:
        """The loaded encoder, or None when search by meaning is off or cannot run (see why_off)."""
        if not self.enabled or self._unavailable is not None:
            return None
        if self._encoder is None:
            async with self._loading:
                if self._encoder is None and self._unavailable is None:
                    try:
                        self._encoder = await anyio.to_thread.run_sync(lambda: load(locate(self._folder)))
                    except ModelUnavailable as exc:
                        self._unavailable = f"search matches words only: {exc}"
                        logger.warning("%s", self._unavailable)
                    except Exception:  # a runtime that cannot load it (a broken install)
                        self._unavailable = (
                            "search matches words only: the embedding model could not be loaded"
                        )
                        logger.exception("%s", self._unavailable)
        return self._encoder

    async def embed(self, texts: list[str]) -> Vectors | None:
        """The texts' vectors, computed off the event loop; None when meaning is off."""
        encoder = await self.encoder()
        if encoder is None:
            return None
        return await anyio.to_thread.run_sync(encoder.embed, texts)

    async def embed_in_background(self, texts: list[str]) -> Vectors | None:
        """The texts' vectors, computed on the background thread; None when meaning is off, or
        when the thread was shut down meanwhile.

        A few texts at a time (`_tasks`), each a task of its own: once the thread is shut down
        (by `close`, or by the interpreter as it exits, which waits for a running task to end),
        what is left is refused, and a process told to stop waits for a few texts, not for a
        whole batch (at a low priority on a busy machine, a minute and more)."""
        encoder = await self.encoder()
        if encoder is None:
            return None
        parts = []
        for some in _tasks(texts):
            try:
                task = self._background.submit(encoder.embed, some)
            except RuntimeError:  # shut down
                return None
            parts.append(await asyncio.wrap_future(task))
        return np.concatenate(parts) if parts else np.zeros((0, DIMENSIONS), dtype=np.float32)

    def close(self) -> None:
        self._background.shutdown(wait=False, cancel_futures=True)
        self.index.close()

    async def query_vector(self, query: str) -> npt.NDArray[np.float32] | None:
        vectors = await self.embed([query]) if query.strip() else None
        return None if vectors is None else vectors[0]

    def later(self, query: str) -> "QueryVector":
        return QueryVector(self, query)


class QueryVector:
    """A query's vector, computed by `compute` (in a task of its own, so that other work goes on
    meanwhile) and awaited by `get`; None when there is none (see Meaning.query_vector)."""

    def __init__(self, meaning: Meaning, query: str) -> None:
        self._meaning = meaning
        self._query = query
        self._vector: npt.NDArray[np.float32] | None = None
        self._done = anyio.Event()

    async def compute(self) -> None:
        try:
            self._vector = await self._meaning.query_vector(self._query)
        finally:
            self._done.set()

    async def get(self) -> npt.NDArray[np.float32] | None:
        await self._done.wait()
        return self._vector


def _tasks(texts: list[str]) -> Iterator[list[str]]:
    """The texts in order, a task's worth at a time (a word piece is taken as four characters)."""
    task: list[str] = []
    pieces = 0
    for text in texts:
        cost = min(MAX_PIECES, len(text) // 4 + 2)
        if task and pieces + cost > _PIECES_PER_TASK:
            yield task
            task, pieces = [], 0
        task.append(text)
        pieces += cost
    if task:
        yield task
