"""page_fault: bring a page into the working set at the level asked for.

A page already mapped at the same or a finer level costs nothing: its content comes back, no fault
is charged and no tokens are added twice. A new mapping, or an upgrade to a finer level, is a
fault, limited per turn. A page that cannot fit says so (`mapped=false` and why); it never
claims success.
"""

from memvm.engine.clock import Clock
from memvm.engine.config import EngineConfig
from memvm.engine.db import Database
from memvm.engine.errors import FaultLimitReached, PageNotFound
from memvm.engine.models import Actor, EvictedPage, FaultResult, Level, Page
from memvm.engine.pages import get_page, touch_page
from memvm.engine.sessions import charge_fault, get_session, touch_session
from memvm.engine.tokens import TokenCounter
from memvm.engine.working_set import WorkingSet, get_mapping

_USED = """
SELECT coalesce(sum(line_tokens + 1), 0) FROM working_set WHERE namespace = ? AND session = ?
"""


async def page_fault(
    db: Database,
    *,
    config: EngineConfig,
    counter: TokenCounter,
    clock: Clock,
    namespace: str,
    session: str,
    page_id: str,
    target_level: Level,
) -> FaultResult:
    now = clock.now()
    async with db.write() as conn:
        state = await touch_session(conn, namespace, session, now, config.turn_idle_seconds)
        page = await get_page(conn, namespace, page_id)
        if page is None:
            raise PageNotFound(page_id)
        current = await get_mapping(conn, namespace, session, page.rowid)
        working_set = WorkingSet(
            conn,
            namespace=namespace,
            session=session,
            turn=state.turn,
            capacity=config.budget_tokens - config.reserved_tokens,
            counter=counter,
            now=now,
        )
        already_mapped = current is not None and current.level <= target_level
        mapped, reason, evicted = True, None, list[EvictedPage]()
        if already_mapped:
            await working_set.refresh(page.rowid)
        else:
            if state.faults_this_turn >= config.max_faults_per_turn:
                raise FaultLimitReached(config.max_faults_per_turn, state.turn, config.turn_idle_seconds)
            placement = await working_set.place(
                page, target_level, actor=Actor.MODEL, cause="page_fault", faulted=True
            )
            mapped, reason, evicted = placement.mapped, placement.reason, placement.evicted
            await charge_fault(conn, namespace, session)
        await touch_page(conn, namespace, page.rowid, now)
        state = await get_session(conn, namespace, session)
        used = await conn.one(_USED, (namespace, session))
    return _result(
        page,
        target_level,
        config=config,
        mapped=mapped or already_mapped,
        already_mapped=already_mapped,
        reason=reason,
        evicted=evicted,
        faults_left=max(0, config.max_faults_per_turn - state.faults_this_turn),
        used=int(used[0]) if used else 0,
    )


def _result(
    page: Page,
    level: Level,
    *,
    config: EngineConfig,
    used: int,
    mapped: bool,
    already_mapped: bool,
    reason: str | None,
    evicted: list[EvictedPage],
    faults_left: int,
) -> FaultResult:
    return FaultResult(
        page_id=page.page_id,
        level=int(level),
        content=page.content(level),
        tokens=page.tokens.at(level),
        type=page.type,
        role=page.role,
        modality=page.modality,
        session=page.session,
        created_at=page.created_at,
        provenance=page.provenance,
        mapped=mapped,
        already_mapped=already_mapped,
        reason=reason,
        evicted=evicted,
        faults_left=faults_left,
        working_set_tokens=config.reserved_tokens + used,
        budget_tokens=config.budget_tokens,
    )
