"""page_fault: bring a page into the working set at the level asked for.

A page already mapped at the same or a finer level costs nothing: its content comes back, no fault
is charged and no tokens are added twice. A new mapping, or an upgrade to a finer level, is a
fault, limited per turn. A level that cannot fit is never handed over: the page is mapped at the
finest coarser level that fits, and says so, or at none (`mapped=false`, no content, nothing
charged), with why and what would make room.
"""

import anyio
from memvm.engine.config import EngineConfig
from memvm.engine.errors import FaultLimitReached
from memvm.engine.models.pages import Level, Page
from memvm.engine.models.sessions import SessionState
from memvm.engine.models.working_set import Actor, EvictedPage, FaultResult
from memvm.engine.paging.context_lines import Bodies, body_tokens
from memvm.engine.paging.pages import page_seen_from, touch_page
from memvm.engine.paging.tokens import TokenCounter
from memvm.engine.paging.working_set import WorkingSet, get_mapping
from memvm.engine.sessions import charge_fault, get_session, read_session, touch_with_allowance
from memvm.engine.storage.api import Database
from memvm.engine.storage.statements import statement

_USED = statement(
    "faults.used",
    """
SELECT coalesce(sum(line_tokens + 1), 0) FROM working_set WHERE namespace = :namespace AND session = :session
""",
)


async def page_fault(
    db: Database,
    *,
    config: EngineConfig,
    counter: TokenCounter,
    namespace: str,
    session: str,
    page_id: str,
    target_level: Level,
    host_session: str | None = None,
    project: str | None = None,
) -> FaultResult:
    """Map the page at `target_level`, or at the finest coarser level that fits, or nowhere.

    No reply carries more than the working set could hold: a level that does not fit is never
    returned. A fault that maps nothing is not charged. `host_session` is the session whose
    working set the host shows; a fault into a session that did not exist yet says so, and a
    fault into an ad-hoc session is charged to `host_session` as well. A page another project
    keeps is not found from `project`.
    """
    levels = [Level(level) for level in range(target_level, Level.REFERENCE + 1)]
    # A long page's line takes a fifth of a second to count: count it before taking the lock
    # (and off the event loop), and again inside only if the page changed in between.
    async with db.read(namespace) as conn:
        seen = await page_seen_from(conn, namespace, page_id, project, live=True)
    bodies = await _bodies(seen, levels, counter)
    async with db.write(namespace) as conn:
        now = conn.now
        new_session = await read_session(conn, namespace, session) is None
        state, accountable = await touch_with_allowance(
            conn, namespace, session, host_session, now, config.turn_idle_seconds
        )
        charged = [state] if accountable is state else [state, accountable]
        page = await page_seen_from(conn, namespace, page_id, project, live=True)
        if page.levels != seen.levels:
            bodies = await _bodies(page, levels, counter)
        current = await get_mapping(conn, namespace, session, page.rowid)
        working_set = WorkingSet(
            conn,
            namespace=namespace,
            session=session,
            turn=state.turn,
            capacity=config.page_budget,
            counter=counter,
            now=now,
        )
        already_mapped = current is not None and current.level <= target_level
        level: Level | None = target_level
        reason, evicted = None, list[EvictedPage]()
        spent = max(charged, key=lambda each: each.faults_this_turn)
        limit_reached = spent.faults_this_turn >= config.max_faults_per_turn
        if already_mapped:
            await working_set.refresh(page.rowid)
        elif limit_reached and current is not None:
            # No upgrade without a fault, but the page is in context already: hand over what is.
            level, already_mapped = current.level, True
            reason = str(_limit_reached(config, spent.turn))
            reason = f"It stays at level {int(level)}, where it already was: {reason[0].lower()}{reason[1:]}"
            await working_set.refresh(page.rowid)
        else:
            if limit_reached:
                raise _limit_reached(config, spent.turn)
            placement = await working_set.place(
                page, levels, actor=Actor.MODEL, cause="page_fault", faulted=True, bodies=bodies
            )
            level, reason, evicted = placement.level, placement.reason, placement.evicted
            if placement.changed:
                for each in charged:
                    await charge_fault(conn, namespace, each.session)
            else:
                already_mapped = placement.mapped
        if level is not None:
            await touch_page(conn, namespace, page.rowid, now)
        charged = [await get_session(conn, namespace, each.session) for each in charged]
        used = await conn.one(_USED, namespace=namespace, session=session)
    notice = None
    if new_session and host_session is not None and session != host_session:
        notice = (
            f"There was no session '{session}': this call started it, with a working set of its own "
            f"that your host does not show (it shows '{host_session}'), and its faults count against "
            "your own session's allowance. Leave out session to use yours."
        )
    return FaultResult(
        page_id=page.page_id,
        level=None if level is None else int(level),
        requested_level=int(target_level),
        content="" if level is None else page.content(level),
        tokens=0 if level is None else page.tokens.at(level),
        type=page.type,
        role=page.role,
        modality=page.modality,
        session=page.session,
        working_set_session=session,
        created_at=page.created_at,
        provenance=page.provenance,
        mapped=level is not None,
        already_mapped=already_mapped,
        reason=reason,
        notice=notice,
        evicted=evicted,
        faults_left=_faults_left(charged, config.max_faults_per_turn),
        working_set_tokens=config.reserved_tokens + (int(used[0]) if used else 0),
        reserved_tokens=config.reserved_tokens,
        page_budget_tokens=config.page_budget,
        budget_tokens=config.budget_tokens,
    )


def _limit_reached(config: EngineConfig, turn: int) -> FaultLimitReached:
    return FaultLimitReached(
        config.max_faults_per_turn, turn, config.turn_idle_seconds, turns_from_host=config.turns_from_host
    )


def _faults_left(charged: list[SessionState], limit: int) -> int:
    return max(0, limit - max(each.faults_this_turn for each in charged))


async def _bodies(page: Page, levels: list[Level], counter: TokenCounter) -> Bodies:
    return await anyio.to_thread.run_sync(lambda: body_tokens(page.levels, levels, counter))
