"""The engine: one object per open database, holding the connections, settings, tokenizer and clock.

The operations of the contract are a scope's (scope.py): `engine.session(namespace, session)` for
what a session does, `engine.namespace(namespace)` for reads of a whole namespace, `engine.view`
for a person's view of one; the engine itself opens, closes and collects expired pages.

The scopes, the writes and the view are imported when first asked for. A host's pre-tool hook
answered in its own process asks only for `engine.guards(...)`, and so never imports paging,
recall or pydantic: they are most of what such a process would spend (docs/performance.md).
"""

import contextlib
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from memvm.engine.clock import Clock, SystemClock
from memvm.engine.config import EngineConfig
from memvm.engine.guard_scope import GuardScope
from memvm.engine.hosts.hook_events import HookEvents
from memvm.engine.paging.tokens import TokenCounter
from memvm.engine.redacted_writes import Redaction
from memvm.engine.storage.api import Database
from memvm.engine.storage.migrations import check_current, migrate
from memvm.engine.storage.open import open_database
from memvm.engine.storage.tokenizer import Stemmer

if TYPE_CHECKING:
    import asyncio

    from memvm.engine.meaning.meaning import Meaning
    from memvm.engine.namespace_view import NamespaceView
    from memvm.engine.paging.memory import Writer
    from memvm.engine.scope import NamespaceScope, SessionScope


# How long closing waits for the embedder to finish its step before cancelling it.
_EMBEDDER_STOPS_WITHIN = 30.0


class Engine:
    def __init__(self, db: Database, config: EngineConfig, counter: TokenCounter, clock: Clock) -> None:
        self.db = db
        self.config = config
        self.counter = counter
        self.clock = clock
        # Redaction as this engine is set: what anything compared with stored text must apply.
        self.redaction = Redaction(config.redact_secrets)
        self.stemmer = Stemmer()
        self._embedding: asyncio.Task[None] | None = None
        self._stop_embedding: anyio.Event | None = None

    @classmethod
    async def open(
        cls,
        path: str | Path,
        config: EngineConfig | None = None,
        *,
        clock: Clock | None = None,
    ) -> "Engine":
        """Open (creating and migrating if new) the database at `path`; ':memory:' for a throwaway.

        `config.reserved_tokens` is what the budget sets aside besides pages (the server sets it
        from its renderers' texts: resources/budget.py). Opening does not wait for the encoding,
        and neither do calls that count nothing (search).
        """
        config = config or EngineConfig()
        clock = clock or SystemClock()
        counter = TokenCounter(config.encoding)
        db = await open_database(path, config, clock)
        try:
            if config.read_only:
                await check_current(db)
            else:
                await migrate(db)
        except BaseException:
            await db.close()
            raise
        return cls(db, config, counter, clock)

    async def close(self) -> None:
        await self.stop_embedding()
        if "meaning" in self.__dict__:  # made only when first asked for
            self.meaning.close()
        await self.db.close()
        self.stemmer.close()

    @cached_property
    def meaning(self) -> "Meaning":
        """Search by meaning: the encoder and the vectors' in-process copies (see meaning/)."""
        # Imported when asked: numpy and the model's runtime are for searches and writes, never for
        # a hook that answers one pre-tool event in its own process.
        from memvm.engine.meaning.meaning import Meaning

        return Meaning(enabled=self.config.semantic_search, model_folder=self.config.embedding_model)

    def start_embedding(self) -> None:
        """Embed pages as they are written, until the engine closes (meaning/embedder.py). For the
        processes that serve (memvm serve, the hooks' background process, memvm ui), never a
        read-only one.

        A task of the event loop's own rather than of a task group: the engine outlives the task
        that opened it (the SSE transport opens it in one connection's lifespan and closes it in
        another's), and `close` ends it, however the engine is closed."""
        import asyncio

        from memvm.engine.meaning.embedder import keep_embedding

        if self._embedding is None and not self.config.read_only and self.config.semantic_search:
            self._stop_embedding = anyio.Event()
            self._embedding = asyncio.get_running_loop().create_task(
                keep_embedding(self.db, self.meaning, self._stop_embedding)
            )

    async def stop_embedding(self) -> None:
        """Tell the embedder to stop and wait for it to finish its step: a batch being embedded is
        dropped at once, a read or write of the database ends first. Cancelled only if it does
        not end, so that no query is left running on a connection about to close."""
        import asyncio

        task, self._embedding = self._embedding, None
        if task is None or task.done():
            return
        assert self._stop_embedding is not None
        self._stop_embedding.set()
        with anyio.move_on_after(_EMBEDDER_STOPS_WITHIN) as waited:
            await asyncio.shield(task)
        if waited.cancelled_caught:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def embed_waiting(self) -> int:
        """Embed every page still waiting for its vector, now; how many (see meaning/embedder.py)."""
        from memvm.engine.meaning.embedder import embed_waiting

        return await embed_waiting(self.db, self.meaning)

    async def ready_to_count(self) -> None:
        """Before anything that counts tokens: the encoding is built, waited for off the event loop."""
        await self.counter.loaded()

    @cached_property
    def _writer(self) -> "Writer":
        from memvm.engine.paging.memory import Writer

        return Writer(db=self.db, config=self.config, counter=self.counter)

    async def counting_writer(self) -> "Writer":
        """What the writes work with, once ready to count (see ready_to_count)."""
        await self.ready_to_count()
        return self._writer

    def namespace(self, namespace: str, *, project: str | None = None) -> "NamespaceScope":
        """Reads of `namespace` as a whole, as a reader in `project` sees it (see scope.py)."""
        from memvm.engine.scope import NamespaceScope

        return NamespaceScope(engine=self, namespace=namespace, project=project)

    def session(
        self, namespace: str, session: str, *, project: str | None = None, host_session: str | None = None
    ) -> "SessionScope":
        """What `session` of `namespace` does, working in `project`; an ad-hoc session's calls are
        charged to `host_session` (see scope.py)."""
        from memvm.engine.scope import SessionScope

        return SessionScope(
            engine=self, namespace=namespace, session=session, project=project, host_session=host_session
        )

    def guards(
        self, namespace: str, session: str, *, project: str | None = None, host_session: str | None = None
    ) -> GuardScope:
        """The guards of `session` alone, as `session(...)` has them, without the rest of a session's
        operations (see guard_scope.py)."""
        return GuardScope(
            engine=self, namespace=namespace, session=session, project=project, host_session=host_session
        )

    @property
    def hook_events(self) -> HookEvents:
        """What the host hooks ask and record of their events (see hosts/hook_events.py)."""
        return HookEvents(self.db, self.redaction)

    def view(self, namespace: str) -> "NamespaceView":
        """What a person's view of `namespace` reads (see namespace_view.py)."""
        # Imported when asked: a hook answering one event in its own process never reads a view.
        from memvm.engine.namespace_view import NamespaceView

        return NamespaceView(self.db, namespace)

    async def collect_expired(self, *, purge: bool = True) -> int:
        """Delete every page whose expiry has come, in every namespace (`memvm gc`); how many.
        `purge=False` leaves the merge and checkpoint to the next purge (see memory.collect_expired)."""
        from memvm.engine.paging.memory import collect_expired

        return await collect_expired(self._writer, purge=purge)
