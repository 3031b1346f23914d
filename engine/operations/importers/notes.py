"""Writing imported notes: one keyed page each, through `remember`, only when it changed.

A note whose stored text, type and pin already say what the file says is left alone, so that a
second import writes nothing; a changed one is rewritten under its key by `remember` (which keeps
what rewriting keeps), never deleted and created again.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from memvm.engine import Engine
from memvm.engine.errors import InvalidArgument, KeyConflict, PageNotFound
from memvm.engine.models import Level, NewPage, PageType
from memvm.engine.operations.transfer import TransferError
from memvm.engine.redaction import redact


class NoteOutcome(StrEnum):
    CREATED = "created"
    REWRITTEN = "rewritten"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class ImportedNote:
    key: str
    content: str
    type: PageType
    provenance: str
    metadata: dict[str, Any]
    pinned: bool = False


async def write_note(engine: Engine, *, namespace: str, session: str, note: ImportedNote) -> NoteOutcome:
    try:
        existing = await engine.get_page(namespace=namespace, page_id=note.key)
    except PageNotFound:
        existing = None
    # Compared with what would be stored: the text as redaction leaves it.
    stored_form = redact(note.content) if engine.config.redact_secrets else note.content
    if (
        existing is not None
        and existing.content(Level.FULL) == stored_form
        and existing.type is note.type
        and existing.pinned == note.pinned
    ):
        return NoteOutcome.UNCHANGED
    page = NewPage(
        content=note.content,
        type=note.type,
        pinned=note.pinned,
        provenance=note.provenance,
        metadata=note.metadata,
    )
    try:
        result = await engine.remember(namespace=namespace, session=session, page=page, key=note.key)
    except (InvalidArgument, KeyConflict) as exc:  # too long, or the key names a conversation's page
        raise TransferError(f"note {note.key}: {exc}") from exc
    return NoteOutcome.CREATED if result.created else NoteOutcome.REWRITTEN
