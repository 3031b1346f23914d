"""A caller's place in memory: the operations of the contract, bound to where they act.

`Engine.namespace(namespace, project=…)` gives a NamespaceScope, for reads of a whole namespace;
`Engine.session(namespace, session, project=…, host_session=…)` gives a SessionScope, which adds
what a session does. The caller fixes the namespace (from the process or the bearer token, never
the model), the project (the work tree a host works in; None: no project, see paging/projects.py)
and the host session (the one whose working set the host shows, which an ad-hoc session's calls
are charged to) once; no operation takes them again, so none can be passed the wrong one.

Each method is one operation; the work is done by the module named for it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from memvm.engine.guard_scope import GuardScope
from memvm.engine.meaning.model_files import OFF_BY_SETTING
from memvm.engine.models.pages import Level, Modality, NewPage, Page, PageType
from memvm.engine.models.procedures import OutcomeResult, ProceduralKnowledge, ToolOutcome
from memvm.engine.models.recall import SearchResult, SearchScope, StandingNote, TranscriptText
from memvm.engine.models.sessions import SessionState, TurnResult
from memvm.engine.models.working_set import FaultResult, MemoryMap, WorkingSetView
from memvm.engine.models.writes import ForgetResult, IngestMessage, IngestResult, PageState, RememberResult
from memvm.engine.names import page_ids, session_names
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
from memvm.engine.paging.search import WORDS_ONLY, SemanticQuery, search_pages
from memvm.engine.paging.versions import versions_of
from memvm.engine.paging.working_set import view_entries
from memvm.engine.procedures import outcomes
from memvm.engine.procedures.procedures import procedural_knowledge
from memvm.engine.sessions import begin_turn, read_session
from memvm.engine.storage.api import Reads

if TYPE_CHECKING:
    from memvm.engine.engine import Engine


@dataclass(frozen=True, kw_only=True)
class NamespaceScope:
    """What is read of one namespace as a whole, as a reader in `project` sees it."""

    engine: "Engine"
    namespace: str
    project: str | None = None

    async def get_page(self, page_id: str) -> Page:
        """The page whole, with its superseded versions; an expired page, or one of a project
        other than this one, is not found."""
        async with self.engine.db.read(self.namespace) as conn:
            page = await page_seen_from(conn, self.namespace, page_id, self.project, live=True)
            earlier = await versions_of(conn, page.rowid)
        version = earlier[-1].version + 1 if earlier else 1
        return page.model_copy(update={"versions": earlier, "version": version})

    async def standing_notes(self, *, limit: int) -> list[StandingNote]:
        """Pinned pages and remembered notes, most recently used first: what a new session wants."""
        async with self.engine.db.read(self.namespace) as conn:
            return await standing_notes(conn, self.namespace, limit, self.project)

    async def procedural_knowledge(
        self,
        *,
        tools: Sequence[str] | None = None,
        goal: str | None = None,
        error_type: str | None = None,
    ) -> ProceduralKnowledge:
        await self.engine.ready_to_count()
        async with self.engine.db.read(self.namespace) as conn:
            return await procedural_knowledge(
                conn, namespace=self.namespace, tools=tools, goal=goal, error_type=error_type
            )

    async def known_tools(self, *, limit: int) -> list[str]:
        """The tools with recorded calls in the namespace, most recently used first."""
        async with self.engine.db.read(self.namespace) as conn:
            return await known_tools(conn, self.namespace, limit)

    async def session_names(self, *, prefix: str, limit: int) -> list[str]:
        async with self.engine.db.read(self.namespace) as conn:
            return await session_names(conn, self.namespace, prefix, limit)

    async def page_ids(self, *, prefix: str, limit: int) -> list[str]:
        async with self.engine.db.read(self.namespace) as conn:
            return await page_ids(conn, self.namespace, prefix, limit)


@dataclass(frozen=True, kw_only=True)
class SessionScope(NamespaceScope, GuardScope):
    """What one session does. `session` may be one the caller made up (ad hoc): it has no budgets
    of its own, and its calls are judged and charged in `host_session`, the caller's own, so a new
    name per call evades nothing."""

    async def remember(
        self,
        *,
        page: NewPage,
        key: str | None = None,
        unless_changed_from: str | None = None,
        ttl_seconds: float | None = None,
        everywhere: bool | None = None,
    ) -> RememberResult:
        return await memory.remember(
            await self.engine.counting_writer(),
            namespace=self.namespace,
            session=self.session,
            page=page,
            key=key,
            unless_changed_from=unless_changed_from,
            ttl_seconds=ttl_seconds,
            project=self.project,
            everywhere=everywhere,
        )

    async def ingest(self, *, messages: Sequence[IngestMessage]) -> IngestResult:
        return await memory.ingest(
            await self.engine.counting_writer(),
            namespace=self.namespace,
            session=self.session,
            messages=messages,
            project=self.project,
        )

    async def write_history(
        self, *, source: str, title: str | None, messages: Sequence[HistoryMessage]
    ) -> HistoryWritten:
        """Store a past conversation's messages as the session's transcript pages, each dated as
        written and mapped nowhere; messages whose `source_id` the session holds are skipped."""
        return await write_history(
            await self.engine.counting_writer(),
            namespace=self.namespace,
            session=self.session,
            source=source,
            title=title,
            messages=messages,
            project=self.project,
        )

    async def pin_page(self, *, page_id: str, pinned: bool, place: bool = True) -> PageState:
        return await memory.pin_page(
            await self.engine.counting_writer(),
            namespace=self.namespace,
            session=self.session,
            page_id=page_id,
            pinned=pinned,
            place=place,
            project=self.project,
        )

    async def forget(self, *, page_id: str) -> ForgetResult:
        return await memory.forget(
            await self.engine.counting_writer(),
            namespace=self.namespace,
            session=self.session,
            page_id=page_id,
            project=self.project,
        )

    async def page_fault(self, *, page_id: str, target_level: Level = Level.ABSTRACT) -> FaultResult:
        engine = self.engine
        await engine.ready_to_count()
        return await faults.page_fault(
            engine.db,
            config=engine.config,
            counter=engine.counter,
            namespace=self.namespace,
            session=self.session,
            page_id=page_id,
            target_level=target_level,
            host_session=self.host_session,
            project=self.project,
        )

    async def search(
        self,
        *,
        query: str,
        limit: int = 5,
        page_type: PageType | None = None,
        modality: Modality | None = None,
        scope: SearchScope = SearchScope.ALL,
        pinned_only: bool = False,
    ) -> SearchResult:
        async def searched(conn: Reads, meaning: SemanticQuery) -> SearchResult:
            return await search_pages(
                conn,
                meaning=meaning,
                namespace=self.namespace,
                viewer_session=self.session,
                query=query,
                limit=limit,
                page_type=page_type,
                modality=modality,
                only_session=self.session if scope is SearchScope.SESSION else None,
                pinned_only=pinned_only,
                project=self.project,
                tuning=self.engine.config.search,
                stemmer=self.engine.stemmer,
            )

        if not self.engine.config.semantic_search:
            # Words alone, without importing the encoder's runtime (a hook answered in its own
            # process searches this way).
            async with self.engine.db.read(self.namespace) as conn:
                found = await searched(conn, WORDS_ONLY)
            found.note = OFF_BY_SETTING
            return found
        # The query is embedded on a thread while the words are scored; search_pages waits for its
        # vector only once it needs it.
        meaning = self.engine.meaning
        vector = meaning.later(query)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(vector.compute)
            async with self.engine.db.read(self.namespace) as conn:
                found = await searched(conn, SemanticQuery(vector.get, meaning.index))
        found.note = meaning.why_off
        return found

    async def begin_turn(self) -> TurnResult:
        async with self.engine.db.write(self.namespace) as conn:
            state = await begin_turn(conn, self.namespace, self.session, conn.now)
        return TurnResult(turn=state.turn, faults_left=self.engine.config.max_faults_per_turn)

    async def record_tool_outcome(self, *, call: ToolOutcome) -> OutcomeResult:
        """Log a finished call; an ad-hoc session's results count in `host_session` for the guards."""
        return await outcomes.record_tool_outcome(
            await self.engine.counting_writer(),
            namespace=self.namespace,
            session=self.session,
            call=call,
            host_session=self.host_session,
            project=self.project,
        )

    async def session_transcript(self, *, limit: int) -> list[TranscriptText]:
        """The session's last `limit` transcript pages as stored, oldest first."""
        async with self.engine.db.read(self.namespace) as conn:
            return await session_transcript(conn, self.namespace, self.session, limit)

    async def transcript_pages(self) -> int:
        """How many transcript pages the session holds."""
        async with self.engine.db.read(self.namespace) as conn:
            return await transcript_pages(conn, self.namespace, self.session)

    async def session_tools(self, *, limit: int) -> list[str]:
        """The tools the session called lately, most recent first."""
        async with self.engine.db.read(self.namespace) as conn:
            return await session_tools(conn, self.namespace, self.session, limit)

    async def session_state(self) -> SessionState:
        """The session as committed; a session never used yet reads as turn 0 with no faults."""
        async with self.engine.db.read(self.namespace) as conn:
            return await self._session_state(conn)

    async def working_set(self) -> WorkingSetView:
        await self.engine.ready_to_count()
        async with self.engine.db.read(self.namespace) as conn:
            return await self._working_set(conn)

    async def memory_map(self) -> MemoryMap:
        """The working set, the pages most worth faulting and the counts, from one snapshot."""
        await self.engine.ready_to_count()
        listed = self.engine.config.manifest_max_pages
        async with self.engine.db.read(self.namespace) as conn:
            return MemoryMap(
                view=await self._working_set(conn),
                available=await available_pages(conn, self.namespace, self.session, listed, self.project),
                counts=await namespace_counts(conn, self.namespace, self.session),
            )

    async def _session_state(self, conn: Reads) -> SessionState:
        state = await read_session(conn, self.namespace, self.session)
        if state is not None:
            return state
        return SessionState(
            namespace=self.namespace,
            session=self.session,
            turn=0,
            faults_this_turn=0,
            turn_started_at=conn.now,
            last_call_at=conn.now,
        )

    async def _working_set(self, conn: Reads) -> WorkingSetView:
        config = self.engine.config
        state = await self._session_state(conn)
        entries = await view_entries(conn, self.namespace, self.session)
        return WorkingSetView(
            session=self.session,
            turn=state.turn,
            entries=entries,
            page_tokens=sum(line_cost(entry.tokens) for entry in entries),
            budget_tokens=config.budget_tokens,
            reserved_tokens=config.reserved_tokens,
            faults_left=max(0, config.max_faults_per_turn - state.faults_this_turn),
            max_faults_per_turn=config.max_faults_per_turn,
        )
