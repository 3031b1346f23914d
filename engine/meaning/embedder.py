"""Embedding the pages that wait for a vector: in batches, off the event loop and off the write lock.

A batch is read in one read transaction, embedded on a worker thread with no transaction open, and
stored in one short write transaction per namespace, which keeps a vector only if its page's text
did not change meanwhile (vector_store.store). Writers never wait for the model: a page is
searchable by words from its write, and by meaning once its batch is stored.

`keep_embedding` runs for the life of a serving process (memvm serve, the hooks' background
process, memvm ui), waking every second to look for new pages (they may come from another process
on the same database). It embeds on a thread of lower priority than the process's requests, and
while pages keep arriving it waits for a pause (up to a few seconds), so that a bulk ingest runs
at nearly the speed it has without the encoder (tests/bench/ingest_meaning.py). `embed_waiting`
does all that waits at once (`memvm embed`).
"""

import logging
import time
from collections import defaultdict
from collections.abc import Callable

import anyio
import anyio.lowlevel
import numpy as np
from memvm.engine.errors import StorageBusy, StorageError, StorageFull, StorageReadOnly, StorageUnavailable
from memvm.engine.meaning.encoder import Vectors
from memvm.engine.meaning.meaning import Meaning
from memvm.engine.meaning.vector_store import (
    Waiting,
    newest_waiting,
    other_models,
    progress,
    requeue_other_models,
    store,
    waiting,
)
from memvm.engine.storage.api import Database

logger = logging.getLogger("memvm.meaning")

BATCH = 32
_IDLE_SECONDS = 1.0
# Pages that arrived less than this long ago mean a writer is busy: embedding waits for a pause...
_QUIET_SECONDS = 0.3
# ...but never longer than this, so that a memory written to without pause is embedded too.
_MOST_DEFERRED = 5.0
_BACKOFF_SECONDS = (5.0, 30.0, 120.0)


async def embed_batch(
    db: Database, meaning: Meaning, batch: int = BATCH, *, stop: anyio.Event | None = None
) -> int:
    """Embed one batch of the pages that wait; how many waited (0: none left, meaning is off, or
    `stop` was set while the batch was embedded: its vectors are dropped, and the pages wait on)."""
    if await meaning.encoder() is None:
        return 0
    async with db.read(None) as conn:
        pages = await waiting(conn, batch)
    if not pages:
        return 0
    # Similar lengths together: a batch is padded to its longest text.
    pages.sort(key=lambda page: len(page.text))
    texts = [page.text for page in pages]
    vectors = (
        await meaning.embed_in_background(texts)
        if stop is None
        else await _embedded_unless_stopped(stop, meaning, texts)
    )
    if vectors is None:
        return 0
    by_namespace: dict[str, list[tuple[Waiting, bytes]]] = defaultdict(list)
    for page, vector in zip(pages, vectors, strict=True):
        by_namespace[page.namespace].append((page, np.ascontiguousarray(vector, dtype=np.float32).tobytes()))
    for namespace, made in by_namespace.items():
        async with db.write(namespace) as conn:
            await store(conn, meaning.model_id, made)
    return len(pages)


async def _embedded_unless_stopped(stop: anyio.Event, meaning: Meaning, texts: list[str]) -> Vectors | None:
    """The texts' vectors, or None as soon as `stop` is set: a batch embedded at a low priority on
    a busy machine can take minutes, and a process told to stop does not wait for it."""
    vectors: Vectors | None = None
    async with anyio.create_task_group() as group:

        async def embed() -> None:
            nonlocal vectors
            vectors = await meaning.embed_in_background(texts)
            group.cancel_scope.cancel()

        group.start_soon(embed)
        await stop.wait()
        group.cancel_scope.cancel()
    return vectors


async def _requeue_other_models(db: Database, model: str) -> None:
    """Pages whose vectors another model made wait again; the write only when there are any."""
    async with db.read(None) as conn:
        found = await other_models(conn, model)
    if found:
        async with db.write(None) as conn:
            await requeue_other_models(conn, model)


async def embed_waiting(
    db: Database, meaning: Meaning, *, on_progress: Callable[[int, int], None] | None = None
) -> int:
    """Embed every page that waits, batch after batch; how many were embedded. `on_progress(done,
    waiting)` is called after each batch."""
    await _requeue_other_models(db, meaning.model_id)
    done = 0
    while count := await embed_batch(db, meaning):
        done += count
        if on_progress is not None:
            async with db.read(None) as conn:
                on_progress(*await progress(conn, meaning.model_id))
    return done


async def keep_embedding(db: Database, meaning: Meaning, stop: anyio.Event) -> None:
    """Embed pages as they come, until `stop` is set (it returns between two steps, never in the
    middle of a transaction). While pages keep arriving (a bulk ingest, an import) it waits for a
    pause, up to `_MOST_DEFERRED` seconds, so that writers have the machine. A failure (a full
    disk, a lost server) is logged once while it lasts and tried again later; it never ends the
    process that runs this."""

    async def pause(seconds: float) -> None:
        """Wait `seconds`, or less if told to stop."""
        with anyio.move_on_after(seconds):
            await stop.wait()

    failures = 0
    requeued = False
    arrivals = _Arrivals()
    last_said: str | None = None
    while not stop.is_set():
        try:
            if not requeued:
                await _requeue_other_models(db, meaning.model_id)
                requeued = True
            while not stop.is_set():
                async with db.read(None) as conn:
                    newest = await newest_waiting(conn)
                if newest is None:
                    break
                # The encoder is loaded once a page waits for it, not before: a server that only
                # reads never spends its memory.
                if await meaning.encoder() is None:
                    return
                if arrivals.busy(newest):
                    await pause(_QUIET_SECONDS)
                    continue
                if not await embed_batch(db, meaning, stop=stop):
                    break
                await anyio.lowlevel.checkpoint()  # the process's own requests go between batches
        except Exception as exc:  # never the end of the process: logged, and tried again later
            backoff = _BACKOFF_SECONDS[min(failures, len(_BACKOFF_SECONDS) - 1)]
            failures += 1
            said = _why_paused(exc)
            if said is None:
                logger.exception("embedding pages paused for %.0f s", backoff)
            elif said != last_said:  # said once while it lasts, not at every try
                logger.warning("embedding pages paused, tried again every %.0f s or less: %s", backoff, said)
            last_said = said
            await pause(backoff)
            continue
        failures, last_said = 0, None
        await pause(_IDLE_SECONDS)


# What keeps pages from their vectors, in the operator's words (a tool's "Storage is full" would
# read as a full disk at a --max-db-mb cap).
_PAUSED_BY: tuple[tuple[type[Exception], str], ...] = (
    (StorageFull, "no room for their vectors (the --max-db-mb or --max-namespace-mb cap, or the disk)"),
    (StorageBusy, "another process held the database's write lock past the busy timeout"),
    (StorageReadOnly, "the database cannot be written"),
    (StorageUnavailable, "the database server cannot be reached"),
)


def _why_paused(exc: Exception) -> str | None:
    """Why embedding paused, for the operator's log; None for a bug."""
    for kind, said in _PAUSED_BY:
        if isinstance(exc, kind):
            return said
    if isinstance(exc, StorageError | OSError):
        return f"the database refused the write ({type(exc).__name__})"
    return None


class _Arrivals:
    """Whether pages are still arriving: the newest page waiting changed less than
    _QUIET_SECONDS ago, and embedding has not been put off for _MOST_DEFERRED seconds already."""

    def __init__(self) -> None:
        self._newest: int | None = None
        self._changed = 0.0
        self._deferred_since: float | None = None

    def busy(self, newest: int) -> bool:
        now = time.monotonic()
        if newest != self._newest:
            self._newest, self._changed = newest, now
        if now - self._changed >= _QUIET_SECONDS:
            self._deferred_since = None
            return False
        if self._deferred_since is None:
            self._deferred_since = now
        if now - self._deferred_since >= _MOST_DEFERRED:
            self._deferred_since = now  # one batch now, then wait again
            return False
        return True
