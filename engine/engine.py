"""The engine: one object per open database, holding the connections, settings, tokenizer and clock.

Each method is one operation of the contract; the work is done by the module named for it.
`namespace` is always the caller's to fix (from the process or the bearer token), never the model's;
so is `project`, the work tree a host works in (None: no project; see paging/projects.py).
"""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memvm.engine.clock import Clock, SystemClock
from memvm.engine.config import EngineConfig
from memvm.engine.guard_config import GuardConfig
from memvm.engine.guards import guards
from memvm.engine.guards.bindings import bind
from memvm.engine.guards.call_log import CallLog
from memvm.engine.guards.grounding import check_ungrounded
from memvm.engine.hosts.hook_events import HookEvents
from memvm.engine.models.guards import BindResult, GroundingResult, ToolCallCheck
from memvm.engine.models.pages import Level, Modality, NewPage, Page, PageType
from memvm.engine.models.procedures import OutcomeResult, ProceduralKnowledge, ToolOutcome
from memvm.engine.models.recall import SearchResult, SearchScope, StandingNote, TranscriptText
from memvm.engine.models.sessions import SessionState, TurnResult
from memvm.engine.models.working_set import FaultResult, MemoryMap, WorkingSetView
from memvm.engine.models.writes import ForgetResult, IngestMessage, IngestResult, PageState, RememberResult
from memvm.engine.names import page_ids, session_names
from memvm.engine.namespace_view import NamespaceView
from memvm.engine.paging import faults, memory
from memvm.engine.paging.context_lines import line_cost
from memvm.engine.paging.history import (
    known_tools,
    session_tools,
    session_transcript,
    standing_notes,
    transcript_pages,
)
from memvm.engine.paging.history_write import HistoryMessage, HistoryWritten, write_history
from memvm.engine.paging.manifest_pages import available_pages, namespace_counts
from memvm.engine.paging.pages import page_seen_from
from memvm.engine.paging.search import search_pages
from memvm.engine.paging.tokens import TokenCounter
from memvm.engine.paging.versions import versions_of
from memvm.engine.paging.working_set import view_entries
from memvm.engine.procedures import outcomes
from memvm.engine.procedures.procedures import procedural_knowledge
from memvm.engine.redacted_writes import Redaction
from memvm.engine.sessions import begin_turn, read_session, touch_session, touch_with_allowance
from memvm.engine.storage.api import Database, Reads
from memvm.engine.storage.migrations import check_current, migrate
from memvm.engine.storage.open import open_database
from memvm.engine.storage.tokenizer import Stemmer

# What the budget sets aside besides pages (the rules and the manifest, as the server renders
# them), counted once the encoding is built.
Reserve = Callable[[EngineConfig, TokenCounter], int]


class Engine:
    def __init__(
        self, db: Database, config: EngineConfig, counter: TokenCounter, clock: Clock, reserve: Reserve | None
    ) -> None:
        self.db = db
        self.config = config
        self.counter = counter
        self.clock = clock
        self._writer = memory.Writer(db=db, config=config, counter=counter, clock=clock)
        self._reserve = reserve
        self.stemmer = Stemmer()

    @classmethod
    async def open(
        cls,
        path: str | Path,
        config: EngineConfig | None = None,
        *,
        clock: Clock | None = None,
        reserve: Reserve | None = None,
    ) -> "Engine":
        """Open (creating and migrating if new) the database at `path`; ':memory:' for a throwaway.

        With `reserve`, the budget's reserve is counted when first needed, once the encoding is
        built: opening does not wait for it, and neither do calls that count nothing (search).
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
        return cls(db, config, counter, clock, reserve)

    async def close(self) -> None:
        await self.db.close()
        self.stemmer.close()

    async def _counting(self) -> None:
        """Before anything that counts tokens or fills the working set: the encoding is built (waited
        for off the event loop) and the reserve is set."""
        await self.counter.loaded()
        if self._reserve is not None:
            reserved = self._reserve(self.config, self.counter)
            self.config = self.config.model_validate({**dict(self.config), "reserved_tokens": reserved})
            self._writer = memory.Writer(
                db=self.db, config=self.config, counter=self.counter, clock=self.clock
            )
            self._reserve = None

    async def remember(
        self,
        *,
        namespace: str,
        session: str,
        page: NewPage,
        key: str | None = None,
        unless_changed_from: str | None = None,
        ttl_seconds: float | None = None,
        project: str | None = None,
        everywhere: bool | None = None,
    ) -> RememberResult:
        await self._counting()
        return await memory.remember(
            self._writer,
            namespace=namespace,
            session=session,
            page=page,
            key=key,
            unless_changed_from=unless_changed_from,
            ttl_seconds=ttl_seconds,
            project=project,
            everywhere=everywhere,
        )

    async def ingest(
        self,
        *,
        namespace: str,
        session: str,
        messages: Sequence[IngestMessage],
        project: str | None = None,
    ) -> IngestResult:
        await self._counting()
        return await memory.ingest(
            self._writer, namespace=namespace, session=session, messages=messages, project=project
        )

    async def write_history(
        self,
        *,
        namespace: str,
        session: str,
        source: str,
        title: str | None,
        messages: Sequence[HistoryMessage],
        project: str | None = None,
    ) -> HistoryWritten:
        """Store a past conversation's messages as `session`'s transcript pages, each dated as
        written and mapped nowhere; messages whose `source_id` the session holds are skipped."""
        await self._counting()
        return await write_history(
            self._writer,
            namespace=namespace,
            session=session,
            source=source,
            title=title,
            messages=messages,
            project=project,
        )

    async def pin_page(
        self,
        *,
        namespace: str,
        session: str,
        page_id: str,
        pinned: bool,
        place: bool = True,
        project: str | None = None,
    ) -> PageState:
        await self._counting()
        return await memory.pin_page(
            self._writer,
            namespace=namespace,
            session=session,
            page_id=page_id,
            pinned=pinned,
            place=place,
            project=project,
        )

    async def forget(
        self, *, namespace: str, session: str, page_id: str, project: str | None = None
    ) -> ForgetResult:
        await self._counting()
        return await memory.forget(
            self._writer, namespace=namespace, session=session, page_id=page_id, project=project
        )

    async def page_fault(
        self,
        *,
        namespace: str,
        session: str,
        page_id: str,
        target_level: Level = Level.ABSTRACT,
        host_session: str | None = None,
        project: str | None = None,
    ) -> FaultResult:
        await self._counting()
        return await faults.page_fault(
            self.db,
            config=self.config,
            counter=self.counter,
            clock=self.clock,
            namespace=namespace,
            session=session,
            page_id=page_id,
            target_level=target_level,
            host_session=host_session,
            project=project,
        )

    async def search(
        self,
        *,
        namespace: str,
        session: str,
        query: str,
        limit: int = 5,
        page_type: PageType | None = None,
        modality: Modality | None = None,
        scope: SearchScope = SearchScope.ALL,
        pinned_only: bool = False,
        project: str | None = None,
    ) -> SearchResult:
        async with self.db.read(namespace) as conn:
            return await search_pages(
                conn,
                namespace=namespace,
                viewer_session=session,
                query=query,
                limit=limit,
                page_type=page_type,
                modality=modality,
                only_session=session if scope is SearchScope.SESSION else None,
                pinned_only=pinned_only,
                project=project,
                tuning=self.config.search,
                stemmer=self.stemmer,
            )

    async def begin_turn(self, *, namespace: str, session: str) -> TurnResult:
        async with self.db.write(namespace) as conn:
            state = await begin_turn(conn, namespace, session, self.clock.now())
        return TurnResult(turn=state.turn, faults_left=self.config.max_faults_per_turn)

    async def bind_value(
        self, *, namespace: str, session: str, tool: str, args: Any, value: Any, name: str | None = None
    ) -> BindResult:
        redaction = self.redaction
        redaction.name(name, "alias")
        args, value = redaction.value(args), redaction.value(value)
        now = self.clock.now()
        async with self.db.write(namespace) as conn:
            state = await touch_session(conn, namespace, session, now, self.config.turn_idle_seconds)
            return await bind(
                conn,
                namespace=namespace,
                session=session,
                turn=state.turn,
                now=now,
                tool=tool,
                args=args,
                value=value,
                name=name,
            )

    async def check_ungrounded(self, *, namespace: str, session: str, args: Any) -> GroundingResult:
        async with self.db.read(namespace) as conn:
            return await check_ungrounded(
                conn,
                namespace=namespace,
                session=session,
                args=args,
                structural_constants=self.config.guards.structural_constants,
                memvm_tools=self.config.guards.memvm_tools,
            )

    async def check_tool_call(
        self,
        *,
        namespace: str,
        session: str,
        tool: str,
        args: Any,
        host_session: str | None = None,
        guards_config: GuardConfig | None = None,
        will_run: bool = False,
    ) -> ToolCallCheck:
        """Every guard at once, on `session`'s calls this turn.

        A session the caller made up (ad hoc) has no budgets of its own: its calls are judged
        and counted in `host_session`, the caller's own, so a new name per call evades nothing.
        `guards_config` replaces the engine's guard settings for this call (a host hook's own).
        `will_run`: the call runs once allowed (a host's pre-tool hook), so checking it again is a
        second call; otherwise a check repeated before any outcome is recorded gets the same verdict.
        """
        now = self.clock.now()
        async with self.db.write(namespace) as conn:
            _, state = await touch_with_allowance(
                conn, namespace, session, host_session, now, self.config.turn_idle_seconds
            )
            log = CallLog(
                conn=conn,
                namespace=namespace,
                session=state.session,
                turn=state.turn,
                redaction=self.redaction,
            )
            config = guards_config or self.config.guards
            return await guards.check_tool_call(
                log, tool=tool, args=args, config=config, now=now, will_run=will_run
            )

    async def record_tool_outcome(
        self,
        *,
        namespace: str,
        session: str,
        call: ToolOutcome,
        host_session: str | None = None,
        project: str | None = None,
    ) -> OutcomeResult:
        """Log a finished call; an ad-hoc session's results count in `host_session` for the guards."""
        await self._counting()
        return await outcomes.record_tool_outcome(
            self._writer,
            namespace=namespace,
            session=session,
            call=call,
            host_session=host_session,
            project=project,
        )

    async def procedural_knowledge(
        self,
        *,
        namespace: str,
        tools: Sequence[str] | None = None,
        goal: str | None = None,
        error_type: str | None = None,
    ) -> ProceduralKnowledge:
        await self._counting()
        async with self.db.read(namespace) as conn:
            return await procedural_knowledge(
                conn, namespace=namespace, tools=tools, goal=goal, error_type=error_type
            )

    async def standing_notes(
        self, *, namespace: str, limit: int, project: str | None = None
    ) -> list[StandingNote]:
        """Pinned pages and remembered notes, most recently used first: what a new session wants."""
        async with self.db.read(namespace) as conn:
            return await standing_notes(conn, namespace, limit, project)

    async def session_transcript(self, *, namespace: str, session: str, limit: int) -> list[TranscriptText]:
        """The session's last `limit` transcript pages as stored, oldest first."""
        async with self.db.read(namespace) as conn:
            return await session_transcript(conn, namespace, session, limit)

    async def transcript_pages(self, *, namespace: str, session: str) -> int:
        """How many transcript pages `session` holds."""
        async with self.db.read(namespace) as conn:
            return await transcript_pages(conn, namespace, session)

    async def session_tools(self, *, namespace: str, session: str, limit: int) -> list[str]:
        """The tools `session` called lately, most recent first."""
        async with self.db.read(namespace) as conn:
            return await session_tools(conn, namespace, session, limit)

    async def known_tools(self, *, namespace: str, limit: int) -> list[str]:
        """The tools with recorded calls in the namespace, most recently used first."""
        async with self.db.read(namespace) as conn:
            return await known_tools(conn, namespace, limit)

    @property
    def redaction(self) -> Redaction:
        """Redaction as this engine is set: what anything compared with stored text must apply."""
        return self._writer.redaction

    @property
    def hook_events(self) -> HookEvents:
        """What the host hooks ask and record of their events (see hosts/hook_events.py)."""
        return HookEvents(self.db, self.clock, self.redaction)

    async def get_page(self, *, namespace: str, page_id: str, project: str | None = None) -> Page:
        """The page whole, with its superseded versions; an expired page, or one of a project other
        than `project`, is not found."""
        async with self.db.read(namespace) as conn:
            page = await page_seen_from(conn, namespace, page_id, project, live=True)
            earlier = await versions_of(conn, page.rowid)
        version = earlier[-1].version + 1 if earlier else 1
        return page.model_copy(update={"versions": earlier, "version": version})

    def view(self, namespace: str) -> NamespaceView:
        """What a person's view of `namespace` reads (see namespace_view.py)."""
        return NamespaceView(self.db, namespace)

    async def collect_expired(self, *, purge: bool = True) -> int:
        """Delete every page whose expiry has come, in every namespace (`memvm gc`); how many.
        `purge=False` leaves the merge and checkpoint to the next purge (see memory.collect_expired)."""
        return await memory.collect_expired(self._writer, purge=purge)

    async def session_state(self, *, namespace: str, session: str) -> SessionState:
        """The session as committed; a session never used yet reads as turn 0 with no faults."""
        async with self.db.read(namespace) as conn:
            return await self._session_state(conn, namespace, session)

    async def _session_state(self, conn: Reads, namespace: str, session: str) -> SessionState:
        state = await read_session(conn, namespace, session)
        if state is not None:
            return state
        now = self.clock.now()
        return SessionState(
            namespace=namespace,
            session=session,
            turn=0,
            faults_this_turn=0,
            turn_started_at=now,
            last_call_at=now,
        )

    async def working_set(self, *, namespace: str, session: str) -> WorkingSetView:
        await self._counting()
        async with self.db.read(namespace) as conn:
            return await self._working_set(conn, namespace, session)

    async def memory_map(self, *, namespace: str, session: str, project: str | None = None) -> MemoryMap:
        """The working set, the pages most worth faulting and the counts, from one snapshot."""
        await self._counting()
        async with self.db.read(namespace) as conn:
            return MemoryMap(
                view=await self._working_set(conn, namespace, session),
                available=await available_pages(
                    conn, namespace, session, self.config.manifest_max_pages, project
                ),
                counts=await namespace_counts(conn, namespace, session),
            )

    async def session_names(self, *, namespace: str, prefix: str, limit: int) -> list[str]:
        async with self.db.read(namespace) as conn:
            return await session_names(conn, namespace, prefix, limit)

    async def page_ids(self, *, namespace: str, prefix: str, limit: int) -> list[str]:
        async with self.db.read(namespace) as conn:
            return await page_ids(conn, namespace, prefix, limit)

    async def _working_set(self, conn: Reads, namespace: str, session: str) -> WorkingSetView:
        state = await self._session_state(conn, namespace, session)
        entries = await view_entries(conn, namespace, session)
        return WorkingSetView(
            session=session,
            turn=state.turn,
            entries=entries,
            page_tokens=sum(line_cost(entry.tokens) for entry in entries),
            budget_tokens=self.config.budget_tokens,
            reserved_tokens=self.config.reserved_tokens,
            faults_left=max(0, self.config.max_faults_per_turn - state.faults_this_turn),
            max_faults_per_turn=self.config.max_faults_per_turn,
        )
