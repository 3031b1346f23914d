"""The write side of memory: remember, ingest, pin and forget.

Levels and token counts are computed before the write transaction starts, so the database lock is
held only for the inserts themselves.
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
from memvm.engine.config import EngineConfig
from memvm.engine.errors import (
    InvalidArgument,
    KeyConflict,
    KeyInOtherProject,
    PageChanged,
    PageTooLong,
    StorageBusy,
    StorageFull,
    StorageUnavailable,
)
from memvm.engine.guards.grounding import register_user_numbers
from memvm.engine.models.pages import REMEMBERED_TYPES, Level, NewPage, Page, PageType, Role
from memvm.engine.models.working_set import Actor, MutationKind
from memvm.engine.models.writes import ForgetResult, IngestMessage, IngestResult, PageState, RememberResult
from memvm.engine.paging.context_lines import Bodies, body_tokens
from memvm.engine.paging.derived import forget_derived
from memvm.engine.paging.levels import Levels, compute_levels
from memvm.engine.paging.pages import (
    delete_page,
    get_page,
    insert_page,
    next_page_id,
    page_seen_from,
    page_with_text,
    set_pinned,
    update_remembered,
)
from memvm.engine.paging.projects import EVERYWHERE, sees
from memvm.engine.paging.tokens import TokenCounter
from memvm.engine.paging.versions import current_version, supersede
from memvm.engine.paging.working_set import WorkingSet, get_mapping, sessions_mapping
from memvm.engine.redacted_writes import Redaction
from memvm.engine.sessions import begin_turn, get_session, touch_session
from memvm.engine.storage.api import Database, Writes
from memvm.engine.storage.purge_queue import OWE_PURGE
from memvm.engine.storage.statements import statement

# A page pinned into context goes in as an abstract, or as a reference where that does not fit.
PINNED_LEVELS = (Level.ABSTRACT, Level.REFERENCE)
# The longest time to live `remember` takes: ten years (longer is "until forgotten").
MAX_TTL_SECONDS = 10 * 365 * 86_400
# How many characters a page holds at most for each token of max_page_tokens. A token of either
# encoding spans about 4 characters of prose or code, 8 of the most indented JSON and XML among
# 1,844 files measured (a Python install, /usr/share), 17 to 21 of padded table columns and "===="
# banner lines; only runs of blank characters go further (up to 128, the longest token). A longer
# text is refused by its length alone, before anything is done with it: counting the tokens of a
# 20 MB prompt took seconds only to refuse it.
MAX_CHARS_PER_TOKEN = 32


def refuse_too_long(config: EngineConfig, text: str) -> None:
    """Raise PageTooLong when `text` has more characters than any page holds: cheap, so it comes
    before the text is redacted or counted."""
    limit = config.max_page_tokens * MAX_CHARS_PER_TOKEN
    if len(text) > limit:
        raise PageTooLong(len(text), limit, "character")


@dataclass(frozen=True)
class Writer:
    """What every write needs: the database, the settings and the token counter. Its time is its
    transaction's (`conn.now`)."""

    db: Database
    config: EngineConfig
    counter: TokenCounter

    @property
    def redaction(self) -> Redaction:
        return Redaction(self.config.redact_secrets)

    def working_set(self, conn: Writes, namespace: str, session: str, turn: int) -> WorkingSet:
        return WorkingSet(
            conn,
            namespace=namespace,
            session=session,
            turn=turn,
            capacity=self.config.page_budget,
            counter=self.counter,
            now=conn.now,
        )

    def levels(self, page: NewPage) -> Levels:
        """The page's levels; PageTooLong when it is over the page limit, told by its length when
        that is enough, else by its tokens before the other levels are made."""
        refuse_too_long(self.config, page.content)
        full_tokens = self.counter.count(page.content)
        if full_tokens > self.config.max_page_tokens:
            raise PageTooLong(full_tokens, self.config.max_page_tokens, "token")
        return compute_levels(
            page.content,
            page_type=page.type,
            role=page.role,
            summary=page.summary,
            counter=self.counter,
            abstract_max_tokens=self.config.abstract_max_tokens,
            reference_max_tokens=self.config.reference_max_tokens,
            full_tokens=full_tokens,
        )

    async def levels_off_loop(self, pages: Sequence[NewPage]) -> list[Levels]:
        # Tokenising a long text takes milliseconds: keep it off the event loop.
        return await anyio.to_thread.run_sync(lambda: [self.levels(page) for page in pages])

    async def bodies_off_loop(self, texts: Sequence[Sequence[str]], levels: Sequence[Level]) -> list[Bodies]:
        """The context-line bodies' tokens of each page's `texts` at `levels`, off the event loop
        and before the write lock is taken: a long page takes a fifth of a second to count."""
        return await anyio.to_thread.run_sync(
            lambda: [body_tokens(page_texts, levels, self.counter) for page_texts in texts]
        )


async def remember(
    writer: Writer,
    *,
    namespace: str,
    session: str,
    page: NewPage,
    key: str | None,
    unless_changed_from: str | None = None,
    ttl_seconds: float | None = None,
    project: str | None = None,
    everywhere: bool | None = None,
) -> RememberResult:
    """Store `page`, or rewrite the remembered page `key` names, keeping what it said before as a
    superseded version (see versions.py). With `ttl_seconds` the page expires that long after this
    write; without, it never does (a rewrite without one makes the page lasting again). With
    `unless_changed_from` (the fingerprint of the full text the writer started from), a page
    rewritten meanwhile is refused with PageChanged, checked inside the write so that no other
    write slips between.

    The writer works in `project` (None: no project). The page belongs to that project, or to every
    project with `everywhere` (a rewrite with `everywhere` None keeps where the page was). What is
    stored is the page as redaction leaves it; the result names the kinds of secret not kept."""
    refuse_too_long(writer.config, page.content)
    page, replaced = writer.redaction.page(page, key)
    if ttl_seconds is not None and not 0 < ttl_seconds <= MAX_TTL_SECONDS:
        raise InvalidArgument(
            f"ttl_seconds must be between 1 and {MAX_TTL_SECONDS} (ten years); omit it to keep the page "
            "until it is forgotten."
        )
    (levels,) = await writer.levels_off_loop([page])
    async with writer.db.write(namespace) as conn:
        now = conn.now
        expires_at = None if ttl_seconds is None else now + ttl_seconds
        state = await touch_session(conn, namespace, session, now, writer.config.turn_idle_seconds)
        await delete_expired(writer, conn, namespace)
        working_set = writer.working_set(conn, namespace, session, state.turn)
        if key:
            existing = await get_page(conn, namespace, key)
        else:
            # The same text remembered again is the page already holding it, not a second copy: a
            # model that repeats itself must not fill memory, nor make search return it twice.
            existing = await page_with_text(conn, namespace, page.type, levels.texts[Level.FULL], project)
        if existing is not None and _expired(existing, now):
            # Gone for every reader already: the key starts afresh, with no versions of it.
            await _drop(writer, conn, namespace, existing, cause="expired")
            existing = None
        if key and existing is not None and not sees(project, existing.project):
            raise KeyInOtherProject(key)
        if existing is not None and existing.type not in REMEMBERED_TYPES:
            raise KeyConflict(existing.page_id, existing.type.value)
        if unless_changed_from is not None and (
            existing is None or fingerprint(existing.levels[Level.FULL]) != unless_changed_from
        ):
            raise PageChanged(key or "")
        if existing is not None:
            if existing.levels[Level.FULL] != levels.texts[Level.FULL]:
                await supersede(conn, namespace, existing, now, writer.config.versions_kept)
            stored = await update_remembered(
                conn,
                namespace=namespace,
                rowid=existing.rowid,
                page=page,
                levels=levels,
                turn=state.turn,
                now=now,
                expires_at=expires_at,
                project=existing.project if everywhere is None else _written_in(project, everywhere),
            )
            # Its old lines are stale in every working set that held it: take it out everywhere.
            await _unmap_everywhere(writer, conn, namespace, existing, cause="rewritten by remember")
        else:
            page_id = key or await fresh_page_id(conn, namespace, page.type)
            stored = await insert_page(
                conn,
                namespace=namespace,
                session=session,
                page_id=page_id,
                page=page,
                levels=levels,
                turn=state.turn,
                now=now,
                expires_at=expires_at,
                project=_written_in(project, bool(everywhere)),
            )
        # A page made now has no versions: it is 1 without asking.
        version = 1 if existing is None else await current_version(conn, stored.rowid)
        placement = None
        if page.pinned:
            placement = await working_set.place(
                stored, PINNED_LEVELS, actor=Actor.MODEL, cause="pinned by remember", faulted=False
            )
    return RememberResult(
        page_id=stored.page_id,
        created=existing is None,
        tokens=levels.tokens.as_dict(),
        mapped=None if placement is None else placement.mapped,
        reason=None if placement is None or placement.mapped else placement.reason,
        version=version,
        expires_at=expires_at,
        redacted=replaced,
    )


def _written_in(project: str | None, everywhere: bool) -> str:
    """The project a page written from `project` belongs to."""
    return EVERYWHERE if everywhere or project is None else project


async def ingest(
    writer: Writer,
    *,
    namespace: str,
    session: str,
    messages: Sequence[IngestMessage],
    project: str | None = None,
) -> IngestResult:
    """Store each message, as redaction leaves it, as a transcript page of `project` and map it in
    full; a user message starts a turn."""
    for message in messages:
        refuse_too_long(writer.config, message.content)
    messages = writer.redaction.messages(messages)
    pages = [
        NewPage(
            content=message.content,
            type=PageType.TRANSCRIPT,
            role=message.role,
            provenance=message.role.value
            if message.role is not Role.TOOL
            else f"tool:{message.name or 'unknown'}",
            metadata={"name": message.name} if message.name else {},
        )
        for message in messages
    ]
    all_levels = await writer.levels_off_loop(pages)
    all_bodies = await writer.bodies_off_loop([levels.texts for levels in all_levels], list(Level))
    page_ids = []
    async with writer.db.write(namespace) as conn:
        now = conn.now
        state = await touch_session(
            conn, namespace, session, now, writer.config.turn_idle_seconds, by_host=True
        )
        await delete_expired(writer, conn, namespace)
        for page, levels, bodies in zip(pages, all_levels, all_bodies, strict=True):
            if page.role is Role.USER:
                state = await begin_turn(conn, namespace, session, now)
                await register_user_numbers(conn, namespace, session, page.content)
            page_id = await fresh_page_id(conn, namespace, PageType.TRANSCRIPT)
            stored = await insert_page(
                conn,
                namespace=namespace,
                session=session,
                page_id=page_id,
                page=page,
                levels=levels,
                turn=state.turn,
                now=now,
                project=_written_in(project, everywhere=False),
            )
            # The conversation so far belongs in context, in full where it fits (else as fine as
            # fits); older pages make room as usual.
            await writer.working_set(conn, namespace, session, state.turn).place(
                stored, list(Level), actor=Actor.HOST, cause="ingest", faulted=False, bodies=bodies
            )
            page_ids.append(page_id)
    return IngestResult(page_ids=page_ids, turn=state.turn)


async def pin_page(
    writer: Writer,
    *,
    namespace: str,
    session: str,
    page_id: str,
    pinned: bool,
    place: bool = True,
    project: str | None = None,
) -> PageState:
    """Pin or unpin a page for the whole namespace; pinning maps it into `session` unless `place`
    is False (a curator pinning a page has no context of its own to put it in)."""
    async with writer.db.write(namespace) as conn:
        state = await touch_session(conn, namespace, session, conn.now, writer.config.turn_idle_seconds)
        page = await page_seen_from(conn, namespace, page_id, project, live=True)
        await set_pinned(conn, namespace, page.rowid, pinned)
        working_set = writer.working_set(conn, namespace, session, state.turn)
        mapping = await get_mapping(conn, namespace, session, page.rowid)
        level = mapping.level if mapping else None
        kind = MutationKind.PIN if pinned else MutationKind.UNPIN
        await working_set.log(page_id, kind, before=level, after=level, actor=Actor.HOST, cause="pin_page")
        if pinned and mapping is None and place:
            placement = await working_set.place(
                page, PINNED_LEVELS, actor=Actor.HOST, cause="pin_page", faulted=False
            )
            level = placement.level
    return PageState(
        page_id=page.page_id,
        session=page.session,
        type=page.type,
        pinned=pinned,
        importance=page.importance,
        mapped=level is not None,
        level=None if level is None else int(level),
        tokens=page.tokens.as_dict(),
    )


def fingerprint(text: str) -> str:
    """What a writer quotes to say which text it started from (see `remember`)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def forget(
    writer: Writer, *, namespace: str, session: str, page_id: str, project: str | None = None
) -> ForgetResult:
    """Delete the page and what it left in other tables (see derived), in one write; then take
    the deleted text out of storage (Database.purge_deleted), outside the write."""
    async with writer.db.write(namespace, removal=True) as conn:
        await touch_session(conn, namespace, session, conn.now, writer.config.turn_idle_seconds)
        page = await page_seen_from(conn, namespace, page_id, project)
        await _drop(writer, conn, namespace, page, cause="forget")
    return ForgetResult(page_id=page_id, deleted=True, purged=await _purged(writer.db))


async def _purged(db: Database) -> bool:
    # The page is deleted whatever happens next: a purge that cannot finish now (the disk is full,
    # another process holds the lock) is finished by the next one, and the reply says which.
    try:
        return await db.purge_deleted()
    except (StorageBusy, StorageFull, StorageUnavailable):
        return False


# Expired pages one write deletes on its way, oldest expiry first: bounded, so that the write after
# a mass expiry stays quick. `memvm gc` deletes every one (Engine.collect_expired).
EXPIRED_PER_WRITE = 50

_EXPIRED = statement(
    "memory.expired",
    "SELECT page_id FROM expired_pages WHERE namespace = :namespace ORDER BY expires_at LIMIT :limit",
)


async def delete_expired(writer: Writer, conn: Writes, namespace: str, limit: int = EXPIRED_PER_WRITE) -> int:
    """Delete up to `limit` of the namespace's pages expired by the write's moment, as forget
    does; how many."""
    rows = await conn.all(_EXPIRED, namespace=namespace, limit=limit)
    for row in rows:
        page = await get_page(conn, namespace, row["page_id"])
        assert page is not None  # just listed, in this transaction
        await _drop(writer, conn, namespace, page, cause="expired")
    return len(rows)


_NAMESPACES_EXPIRED = statement("memory.namespaces expired", "SELECT DISTINCT namespace FROM expired_pages")

# Expired pages each of gc's writes deletes: more than a page write's, still one short write each.
EXPIRED_PER_GC_WRITE = 500


async def collect_expired(writer: Writer, *, purge: bool = True) -> int:
    """Delete every expired page of every namespace, a bounded batch per write; how many. Without
    `purge` (before an export, which reads rows, never the index's segments or the WAL) the
    deletes stay owed a purge, as a write's own deletes of expired pages do."""
    async with writer.db.read(None) as conn:  # every namespace
        namespaces = [row["namespace"] for row in await conn.all(_NAMESPACES_EXPIRED)]
    deleted = 0
    for namespace in namespaces:
        while True:
            async with writer.db.write(namespace, removal=True) as conn:
                done = await delete_expired(writer, conn, namespace, limit=EXPIRED_PER_GC_WRITE)
            deleted += done
            if done < EXPIRED_PER_GC_WRITE:
                break
    # As after a forget: the deleted texts leave the search index and the WAL (see _purged), and
    # those a write deleted on its way, or a forget whose purge did not finish, as well.
    if purge and (deleted or await writer.db.purge_owed()):
        await _purged(writer.db)
    return deleted


def _expired(page: Page, now: float) -> bool:
    return page.expires_at is not None and page.expires_at <= now


async def _drop(writer: Writer, conn: Writes, namespace: str, page: Page, *, cause: str) -> None:
    """Take `page` out of every working set, forget what it left in other tables (see derived),
    and delete it with its texts and versions."""
    await _unmap_everywhere(writer, conn, namespace, page, cause=cause, kind=MutationKind.FORGET)
    await forget_derived(conn, namespace, page)
    await delete_page(conn, namespace, page.rowid)
    await conn.execute(OWE_PURGE)


async def _unmap_everywhere(
    writer: Writer,
    conn: Writes,
    namespace: str,
    page: Page,
    *,
    cause: str,
    kind: MutationKind = MutationKind.UNMAP,
) -> None:
    for holder, level in await sessions_mapping(conn, namespace, page.rowid):
        turn = (await get_session(conn, namespace, holder)).turn
        working_set = writer.working_set(conn, namespace, holder, turn)
        await working_set.unmap(page.rowid)
        await working_set.log(page.page_id, kind, before=level, after=None, actor=Actor.ENGINE, cause=cause)


async def fresh_page_id(conn: Writes, namespace: str, page_type: PageType) -> str:
    """The next generated id for `page_type`, skipping any that a caller's key has taken."""
    while True:
        page_id = await next_page_id(conn, namespace, page_type)
        if await get_page(conn, namespace, page_id) is None:
            return page_id
