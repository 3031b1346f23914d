"""Writing imported notes: one keyed page each, through `remember`, only when it changed.

A note whose stored text and type already say what the file says is left alone, so that a second
import writes nothing, and neither is its pin, importance or expiry: those are the user's, unless
the file says otherwise (only memvm's own markdown export does). A changed one is rewritten under
its key by `remember` (which keeps what rewriting keeps), never deleted and created again.

Every note is checked before any is written: one that cannot be stored (over the page limit, a
key that names a conversation's page, an expiry out of range) is left out with a warning that
names it, and the others are written.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import anyio
from memvm.engine import Engine
from memvm.engine.errors import InvalidArgument, KeyConflict, PageNotFound, PageTooLong
from memvm.engine.models.pages import REMEMBERED_TYPES, Level, NewPage, Page, PageType
from memvm.engine.paging.memory import MAX_TTL_SECONDS, refuse_too_long

if TYPE_CHECKING:
    from memvm.engine.operations.importers.counts import ImportCounts


class NoteOutcome(StrEnum):
    CREATED = "created"
    REWRITTEN = "rewritten"
    UNCHANGED = "unchanged"
    EXPIRED = "expired"


@dataclass(frozen=True)
class ImportedNote:
    key: str
    content: str
    type: PageType
    provenance: str
    metadata: dict[str, Any]
    where: str  # the file, or the file and entity, for a warning about this note
    pinned: bool | None = None  # None: the source does not say; the stored pin stands
    says_expiry: bool = False  # whether `expires_at` is the source's word (None: never expires)
    expires_at: float | None = None


async def too_long(engine: Engine, text: str) -> PageTooLong | None:
    """Why `text` is over the page limit, or None. Its length is enough to refuse a text longer than
    any page; a token is at least a byte, so text of fewer bytes than the limit is never counted."""
    try:
        refuse_too_long(engine.config, text)
    except PageTooLong as exc:
        return exc
    limit = engine.config.max_page_tokens
    stored = engine.redaction.text(text)
    if len(stored.encode("utf-8")) <= limit:
        return None
    tokens = await anyio.to_thread.run_sync(engine.counter.count, stored)
    return PageTooLong(tokens, limit, "token") if tokens > limit else None


def over_the_limit(where: str, too_long: PageTooLong) -> str:
    return (
        f"{where} is {too_long.size} {too_long.unit}s, over the {too_long.limit}-{too_long.unit} page limit "
        "(max_page_tokens): left out"
    )


async def write_notes(
    engine: Engine, *, namespace: str, session: str, notes: list[ImportedNote], counts: "ImportCounts"
) -> None:
    """Check every note, then write those that can be stored and changed; count each."""
    storable: list[tuple[ImportedNote, Page | None]] = []
    for note in notes:
        existing = await _existing(engine, namespace, note.key)
        if (problem := await _unstorable(engine, note, existing)) is not None:
            counts.skip(problem)
        else:
            storable.append((note, existing))
    for note, existing in storable:
        try:
            outcome = await _write(engine, namespace, session, note, existing)
        except (InvalidArgument, KeyConflict) as exc:  # written meanwhile by another writer
            counts.skip(f"{note.where}: {exc}")
            continue
        counts.note(outcome)
        if note.pinned and outcome is not NoteOutcome.EXPIRED and not (existing and existing.pinned):
            # A pinned page is in every manifest and comes first in every listing: an imported file
            # can put its text before the model in every conversation, so the person is told.
            counts.notices.append(
                f"{note.where}: pinned by the file (pinned: true), so it is listed first and shown in "
                "every manifest; unpin it in memvm ui, or set pinned: false, if that is not meant"
            )


async def _existing(engine: Engine, namespace: str, key: str) -> Page | None:
    try:
        return await engine.namespace(namespace).get_page(page_id=key)
    except PageNotFound:
        return None


async def _unstorable(engine: Engine, note: ImportedNote, existing: Page | None) -> str | None:
    if existing is not None and existing.type not in REMEMBERED_TYPES:
        return (
            f"{note.where}: its key {note.key!r} names a {existing.type.value} page of a conversation, "
            "which a note cannot replace: left out"
        )
    if (over := await too_long(engine, note.content)) is not None:
        return over_the_limit(note.where, over)
    if note.expires_at is not None and note.expires_at - engine.clock.now() > MAX_TTL_SECONDS:
        return f"{note.where}: expires more than ten years from now, which memvm does not keep: left out"
    return None


async def _write(
    engine: Engine, namespace: str, session: str, note: ImportedNote, existing: Page | None
) -> NoteOutcome:
    now = engine.clock.now()
    expires_at = note.expires_at if note.says_expiry else (existing.expires_at if existing else None)
    if expires_at is not None and expires_at <= now:
        return NoteOutcome.EXPIRED
    # Compared with what would be stored: the text as redaction leaves it.
    stored_form = engine.redaction.text(note.content)
    if (
        existing is not None
        and existing.content(Level.FULL) == stored_form
        and existing.type is note.type
        and (note.pinned is None or existing.pinned == note.pinned)
        and (not note.says_expiry or _same_moment(existing.expires_at, note.expires_at))
    ):
        return NoteOutcome.UNCHANGED
    page = NewPage(
        content=note.content,
        type=note.type,
        pinned=note.pinned if note.pinned is not None else bool(existing and existing.pinned),
        importance=existing.importance if existing is not None else 0.5,
        provenance=note.provenance,
        metadata=note.metadata,
    )
    result = await engine.session(namespace, session).remember(
        page=page, key=note.key, ttl_seconds=None if expires_at is None else expires_at - now
    )
    return NoteOutcome.CREATED if result.created else NoteOutcome.REWRITTEN


def _same_moment(stored: float | None, said: float | None) -> bool:
    # The export writes an expiry to the second.
    if stored is None or said is None:
        return stored is said
    return abs(stored - said) < 1
