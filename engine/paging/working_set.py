"""A session's working set: which pages sit in the context, at which level, within the budget.

What a page costs is the exact token count of the line it is rendered as (context_lines.py), plus
one for the newline that joins lines. When a mapping does not fit, mapped pages are first demoted
to coarser levels and only then unmapped, weakest first by an importance-weighted LRU that also
weighs page type. Pinned pages and pages faulted in the current turn are never touched. Every
change goes to the append-only mutation log.
"""

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from memvm.engine.models.pages import Level, Page, PageType, Role
from memvm.engine.models.working_set import Actor, EvictedPage, Mapping, MutationKind, WorkingSetEntry
from memvm.engine.paging.context_lines import Bodies, body_tokens, context_line, line_cost, line_head
from memvm.engine.paging.mutation_log import LogEntry, append_changes
from memvm.engine.paging.pages import level_texts
from memvm.engine.paging.tokens import TokenCounter
from memvm.engine.storage.api import Reads, Row, Writes
from memvm.engine.storage.statements import Statement, statement

# How long each type of page holds on to its place: claims and summaries stay longest.
TYPE_RETENTION = {
    PageType.CLAIM: 3.0,
    PageType.SUMMARY: 3.0,
    PageType.PREFERENCE: 2.5,
    PageType.PROCEDURE: 2.0,
    PageType.NOTE: 1.5,
    PageType.TRANSCRIPT: 1.0,
    PageType.TOOL_RESULT: 0.8,
}

_MAPPING_COLUMNS = """w.page_rowid, w.level, w.line_tokens, w.faulted_turn, w.last_access_turn,
       p.page_id, p.type, p.importance, p.pinned, p.last_access"""

_ONE_MAPPING = statement(
    "working_set.mapping",
    f"""
SELECT {_MAPPING_COLUMNS}
FROM working_set w JOIN pages p ON p.rowid = w.page_rowid
WHERE w.namespace = :namespace AND w.session = :session
AND w.page_rowid = :page_rowid
""",
)

# What the rest of the working set costs (a line's cost is its tokens plus a newline, as in
# `line_cost`), and the level `:page_rowid` is mapped at now, if it is.
_ROOM = statement(
    "working_set.room",
    """
SELECT coalesce(sum(line_tokens + 1) FILTER (WHERE page_rowid != :page_rowid), 0),
       max(level) FILTER (WHERE page_rowid = :page_rowid)
FROM working_set WHERE namespace = :namespace AND session = :session
""",
)

# `retention` in SQL, so the weakest mappings come first without reading the whole working set.
# The same doubles in the same order of operations give the same order as the Python function.
_RETENTION = (
    "CASE p.type "
    + " ".join(f"WHEN '{page_type.value}' THEN {weight!r}" for page_type, weight in TYPE_RETENTION.items())
    + " END * (0.25 + p.importance)"
    + " / (1 + CASE WHEN :turn > w.last_access_turn THEN :turn - w.last_access_turn ELSE 0 END)"
)


def _weakest(condition: str) -> str:
    """Mappings that may be demoted or unmapped to make room for `:page_rowid`, and meet
    `condition`: not pinned, not faulted this turn (`:turn`), weakest first; `:limit` bounds how
    many are read."""
    return f"""
SELECT {_MAPPING_COLUMNS}, p.role, t.content, t.reduced, p.abstract, p.reference
FROM working_set w JOIN pages p ON p.rowid = w.page_rowid
JOIN page_texts t ON t.rowid = w.page_rowid
WHERE w.namespace = :namespace AND w.session = :session
AND w.page_rowid != :page_rowid {condition}AND p.pinned = 0 AND w.faulted_turn IS DISTINCT FROM :turn
ORDER BY {_RETENTION}, p.last_access, w.page_rowid
LIMIT :limit"""


_MOVABLE = statement("working_set.movable", _weakest(""))
# Those of them not yet at the coarsest level.
_DEMOTABLE = statement("working_set.demotable", _weakest(f"AND w.level < {int(Level.REFERENCE)} "))

_FIRST_CANDIDATES = 32

_UPSERT = statement(
    "working_set.upsert",
    """
INSERT INTO working_set
    (namespace, session, page_rowid, level, line_tokens, faulted_turn, last_access_turn, mapped_at)
VALUES (:namespace, :session, :page_rowid, :level, :line_tokens, :faulted_turn, :last_access_turn, :now)
ON CONFLICT (namespace, session, page_rowid) DO UPDATE SET
    level = excluded.level, line_tokens = excluded.line_tokens,
    faulted_turn = coalesce(excluded.faulted_turn, working_set.faulted_turn),
    last_access_turn = excluded.last_access_turn
""",
)

_SET_LEVEL = statement(
    "working_set.set level",
    """
UPDATE working_set SET level = :level, line_tokens = :line_tokens
WHERE namespace = :namespace AND session = :session AND page_rowid = :page_rowid
""",
)

_REFRESH = statement(
    "working_set.refresh",
    """
UPDATE working_set SET last_access_turn = :turn, faulted_turn = :turn
WHERE namespace = :namespace AND session = :session AND page_rowid = :page_rowid
""",
)

_UNMAP = statement(
    "working_set.unmap",
    "DELETE FROM working_set WHERE namespace = :namespace AND session = :session AND page_rowid = :page_rowid",
)

# What the working set cannot give up: pinned pages (how many, and their tokens), and pages
# faulted in this turn (:turn).
_HELD = statement(
    "working_set.held",
    """
SELECT count(*) FILTER (WHERE p.pinned = 1), coalesce(sum(w.line_tokens + 1) FILTER (WHERE p.pinned = 1), 0),
       coalesce(sum(w.line_tokens + 1) FILTER (WHERE p.pinned = 0 AND w.faulted_turn = :turn), 0)
FROM working_set w JOIN pages p ON p.rowid = w.page_rowid
WHERE w.namespace = :namespace AND w.session = :session
""",
)

_SESSIONS_MAPPING = statement(
    "working_set.sessions mapping",
    "SELECT session, level FROM working_set WHERE namespace = :namespace AND page_rowid = :page_rowid",
)

_VIEW = statement(
    "working_set.view",
    """
SELECT w.level, w.line_tokens, p.page_id, p.type, p.role, t.content, t.reduced, p.abstract, p.reference
FROM working_set w JOIN live_pages p ON p.rowid = w.page_rowid JOIN page_texts t ON t.rowid = w.page_rowid
WHERE w.namespace = :namespace AND w.session = :session
ORDER BY p.created_at, p.rowid
""",
)


def _mapping(row: Row) -> Mapping:
    return Mapping(
        page_id=row["page_id"],
        rowid=row["page_rowid"],
        level=Level(row["level"]),
        line_tokens=row["line_tokens"],
        pinned=bool(row["pinned"]),
        faulted_turn=row["faulted_turn"],
        last_access_turn=row["last_access_turn"],
        page_type=PageType(row["type"]),
        importance=row["importance"],
        last_access=row["last_access"],
    )


async def get_mapping(conn: Reads, namespace: str, session: str, rowid: int) -> Mapping | None:
    row = await conn.one(_ONE_MAPPING, namespace=namespace, session=session, page_rowid=rowid)
    return _mapping(row) if row else None


def retention(mapping: Mapping, turn: int) -> float:
    """Higher stays longer: importance and type, discounted by turns since last use.

    Eviction orders by `_RETENTION`, this formula in SQL; tests hold the two to the same order.
    """
    idle_turns = max(0, turn - mapping.last_access_turn)
    return TYPE_RETENTION[mapping.page_type] * (0.25 + mapping.importance) / (1 + idle_turns)


@dataclass
class _Slot:
    mapping: Mapping
    level: Level | None
    line_tokens: int
    role: Role | None
    texts: tuple[str, str, str, str]

    def line(self, level: Level) -> str:
        return context_line(self.mapping.page_id, self.mapping.page_type, self.role, self.texts[level])


def _slot(row: Row) -> _Slot:
    role = Role(row["role"]) if row["role"] else None
    mapping = _mapping(row)
    return _Slot(mapping, mapping.level, mapping.line_tokens, role, level_texts(row))


@dataclass(frozen=True)
class Placement:
    """What mapping one page did: at which level it fit (None: at none), what it displaced, and
    why not at the level asked for."""

    level: Level | None
    evicted: list[EvictedPage]
    reason: str | None
    page_tokens: int
    # Whether the working set changed: False when nothing fit, or only where the page already was.
    changed: bool

    @property
    def mapped(self) -> bool:
        return self.level is not None


class WorkingSet:
    """Operations on one session's working set, inside the caller's write transaction."""

    def __init__(
        self,
        conn: Writes,
        *,
        namespace: str,
        session: str,
        turn: int,
        capacity: int,
        counter: TokenCounter,
        now: float,
    ) -> None:
        self._conn = conn
        self._namespace = namespace
        self._session = session
        self._turn = turn
        self._capacity = capacity
        self._counter = counter
        self._now = now
        # The parameters every statement about this working set takes.
        self._here = {"namespace": namespace, "session": session}

    async def place(
        self,
        page: Page,
        levels: Sequence[Level],
        *,
        actor: Actor,
        cause: str,
        faulted: bool,
        bodies: Bodies | None = None,
    ) -> Placement:
        """Map `page` at the first of `levels` that fits (or move it there), making room if needed.

        Never overfills. `bodies` are the line bodies' tokens (body_tokens), counted by the caller
        off the event loop and outside the lock; without them they are counted here, which is only
        for short texts.
        """
        bodies = bodies if bodies is not None else body_tokens(page.levels, levels, self._counter)
        head = self._counter.count(line_head(page.page_id, page.type, page.role))
        row = await self._conn.one(_ROOM, **self._here, page_rowid=page.rowid)
        assert row is not None  # an aggregate always yields a row
        used, current_level = row[0], None if row[1] is None else Level(row[1])
        # Only levels finer than where the page already is would change anything.
        tries = [level for level in levels if current_level is None or level < current_level]
        for level in tries:
            line_tokens = head + bodies[level]
            need = line_cost(line_tokens)
            plan = await self._plan_room(page.rowid, need - (self._capacity - used))
            if plan is not None:
                break
        else:
            if current_level is not None:
                stays = await self._coarser(levels[0], head + bodies[levels[0]], current_level, "it stays at")
                return Placement(current_level, [], stays, used, changed=False)
            nowhere = await self._no_room(line_cost(head + bodies[levels[-1]]))
            return Placement(level=None, evicted=[], reason=nowhere, page_tokens=used, changed=False)
        evicted = await self._apply(plan, cause=f"make room for {page.page_id}")
        await self._conn.execute(
            _UPSERT,
            **self._here,
            page_rowid=page.rowid,
            level=int(level),
            line_tokens=line_tokens,
            faulted_turn=self._turn if faulted else None,
            last_access_turn=self._turn,
            now=self._now,
        )
        kind = MutationKind.MAP
        if current_level is not None:
            kind = MutationKind.PROMOTE if level < current_level else MutationKind.DEMOTE
        await self.log(page.page_id, kind, before=current_level, after=level, actor=actor, cause=cause)
        freed = sum(
            line_cost(s.mapping.line_tokens) - (line_cost(s.line_tokens) if s.level is not None else 0)
            for s in plan
        )
        coarser = level != levels[0]
        reason = (
            await self._coarser(levels[0], head + bodies[levels[0]], level, "it was mapped at")
            if coarser
            else None
        )
        return Placement(level, evicted, reason, used - freed + need, changed=True)

    async def _coarser(self, wanted: Level, wanted_tokens: int, level: Level, verb: str) -> str:
        """Why the page is at a coarser `level` than `wanted`: its size, or what holds the room."""
        need = line_cost(wanted_tokens)
        if need > self._capacity:
            why = f"more than the whole {self._capacity:,}-token page budget"
        else:
            held, _ = await self._held()
            why = f"of the {self._capacity:,}-token page budget, and " + (
                "; ".join(held) if held else "the rest is taken"
            )
        return (
            f"At level {int(wanted)} the page's context line needs {need:,} tokens, {why}; {verb} "
            f"level {int(level)} instead. search_pages finds the parts of it you need."
        )

    async def _held(self) -> tuple[list[str], bool]:
        """What the working set cannot give up now, in words (pinned pages, pages loaded this turn),
        and whether pages loaded this turn are part of it."""
        row = await self._conn.one(_HELD, **self._here, turn=self._turn)
        assert row is not None  # an aggregate always yields a row
        pinned, pinned_tokens, faulted_tokens = row
        held = []
        if pinned:
            held.append(
                f"{pinned} pinned page{'s hold' if pinned > 1 else ' holds'} {pinned_tokens:,} tokens "
                "until unpinned"
            )
        if faulted_tokens:
            held.append(f"pages loaded this turn hold {faulted_tokens:,} tokens until the next turn")
        return held, bool(faulted_tokens)

    async def _no_room(self, need: int) -> str:
        """Why a page fits at no level, naming only what would really make room."""
        if need > self._capacity:
            return (
                f"Even at level 3 the page's context line needs {need:,} tokens, more than the whole "
                f"{self._capacity:,}-token page budget: answer from its search snippet, or ask the "
                "operator for a larger budget."
            )
        held, loaded_this_turn = await self._held()
        later = ", or fault it again at the next turn" if loaded_this_turn else ""
        return (
            f"Even at level 3 the page's context line needs {need:,} tokens, and no more can be freed in "
            f"the {self._capacity:,}-token page budget: " + "; ".join(held) + ". Nothing was loaded or "
            f"charged: answer from the page's search snippet{later}."
        )

    async def unmap(self, rowid: int) -> None:
        await self._conn.execute(_UNMAP, **self._here, page_rowid=rowid)

    async def refresh(self, rowid: int) -> None:
        """Mark a mapped page as used this turn: it moves to the back of the eviction queue."""
        await self._conn.execute(_REFRESH, **self._here, turn=self._turn, page_rowid=rowid)

    async def _plan_room(self, rowid: int, shortfall: int) -> list[_Slot] | None:
        """The demotions and unmappings that free `shortfall` tokens (never touching `rowid`), or None."""
        if shortfall <= 0:
            return []
        params = {**self._here, "page_rowid": rowid, "turn": self._turn}
        # Room for a page is nearly always found by the first demotion round among the weakest few
        # mappings that can still be demoted: read those first, and more only while the round runs
        # past them. Mappings already at REFERENCE are skipped by that round anyway, so the plan is
        # the same as over the whole set.
        async for rows, complete in self._weakest_first(_DEMOTABLE, params):
            demotable = [_slot(row) for row in rows]
            if self._demote(demotable, shortfall, single_pass=True) >= shortfall:
                return [s for s in demotable if s.level != s.mapping.level]
            if complete:
                break
        # Every demotable mapping was read and one round is not enough: more rounds, then unmap the
        # weakest, for which the same prefix-first reading of the movable mappings applies.
        for slot in demotable:
            slot.level, slot.line_tokens = slot.mapping.level, slot.mapping.line_tokens
        freed_by_demotion = self._demote(demotable, shortfall, single_pass=False)
        by_rowid = {slot.mapping.rowid: slot for slot in demotable}
        async for rows, complete in self._weakest_first(_MOVABLE, params):
            order = [by_rowid.get(row["page_rowid"]) or _slot(row) for row in rows]
            freed, unmapped = freed_by_demotion, []
            for slot in order:
                if freed >= shortfall:
                    break
                freed += line_cost(slot.line_tokens)
                unmapped.append(slot)
            if freed >= shortfall or complete:
                break
        if freed < shortfall:
            return None
        for slot in unmapped:
            slot.level, slot.line_tokens = None, 0
        changed = {s.mapping.rowid: s for s in [*demotable, *unmapped] if s.level != s.mapping.level}
        # In eviction order, as the mutation log and the reply list them: `order` is a prefix of it.
        read = {s.mapping.rowid for s in order}
        return [s for s in order if s.mapping.rowid in changed] + [
            s for s in demotable if s.mapping.rowid in changed and s.mapping.rowid not in read
        ]

    async def _weakest_first(
        self, sql: Statement, params: dict[str, object]
    ) -> AsyncIterator[tuple[list[Row], bool]]:
        """Ever longer prefixes (32, 128, 512, ...) of the mappings `sql` lists weakest first, each
        with whether it is all of them: callers stop at the first prefix that is enough."""
        limit = _FIRST_CANDIDATES
        while True:
            rows = await self._conn.all(sql, **params, limit=limit)
            yield rows, len(rows) < limit
            limit *= 4

    def _demote(self, slots: list[_Slot], shortfall: int, *, single_pass: bool) -> int:
        """Demote one level at a time, weakest first, round after round until it fits; tokens freed."""
        freed = 0
        while freed < shortfall:
            progressed = False
            for slot in slots:
                if slot.level is None or slot.level == Level.REFERENCE:
                    continue
                coarser = Level(slot.level + 1)
                # Short pages often read the same at the next level: nothing to count then.
                same = slot.texts[coarser] == slot.texts[slot.level]
                tokens = slot.line_tokens if same else self._counter.count(slot.line(coarser))
                freed += slot.line_tokens - tokens
                slot.level, slot.line_tokens = coarser, tokens
                progressed = True
                if freed >= shortfall:
                    break
            if not progressed or single_pass:
                break
        return freed

    async def _apply(self, plan: list[_Slot], *, cause: str) -> list[EvictedPage]:
        # Three statements for the whole plan, however many pages it moves: each is one trip.
        unmaps = [{**self._here, "page_rowid": s.mapping.rowid} for s in plan if s.level is None]
        demotions = [
            {**self._here, "page_rowid": s.mapping.rowid, "level": int(s.level), "line_tokens": s.line_tokens}
            for s in plan
            if s.level is not None
        ]
        if unmaps:
            await self._conn.executemany(_UNMAP, unmaps)
        if demotions:
            await self._conn.executemany(_SET_LEVEL, demotions)
        await self.log_many(
            [
                (
                    s.mapping.page_id,
                    MutationKind.UNMAP if s.level is None else MutationKind.DEMOTE,
                    s.mapping.level,
                    s.level,
                )
                for s in plan
            ],
            actor=Actor.ENGINE,
            cause=cause,
        )
        return [
            EvictedPage(
                page_id=s.mapping.page_id,
                level_before=int(s.mapping.level),
                level_after=None if s.level is None else int(s.level),
            )
            for s in plan
        ]

    async def log(
        self,
        page_id: str,
        kind: MutationKind,
        *,
        before: Level | None,
        after: Level | None,
        actor: Actor,
        cause: str,
    ) -> None:
        await self.log_many([(page_id, kind, before, after)], actor=actor, cause=cause)

    async def log_many(
        self, changes: list[tuple[str, MutationKind, Level | None, Level | None]], *, actor: Actor, cause: str
    ) -> None:
        """Append (page id, kind, level before, level after) changes to the mutation log, in order."""
        entry = LogEntry(self._namespace, self._session, self._turn, actor, cause, self._now)
        await append_changes(self._conn, entry, changes)


async def sessions_mapping(conn: Reads, namespace: str, rowid: int) -> list[tuple[str, Level]]:
    """Every session whose working set holds the page, with its level there."""
    rows = await conn.all(_SESSIONS_MAPPING, namespace=namespace, page_rowid=rowid)
    return [(row["session"], Level(row["level"])) for row in rows]


async def view_entries(conn: Reads, namespace: str, session: str) -> list[WorkingSetEntry]:
    """The mapped pages as rendered lines, in a stable order (oldest page first); an expired page
    is left out at once, before the write that deletes it unmaps it."""
    entries = []
    for row in await conn.all(_VIEW, namespace=namespace, session=session):
        level = Level(row["level"])
        texts = level_texts(row)
        role = Role(row["role"]) if row["role"] else None
        entries.append(
            WorkingSetEntry(
                page_id=row["page_id"],
                level=int(level),
                tokens=row["line_tokens"],
                line=context_line(row["page_id"], PageType(row["type"]), role, texts[level]),
            )
        )
    return entries
