"""Writing history: a past conversation's messages as transcript pages, each with its own date.

A conversation brought in from elsewhere (another assistant's export) is not a live session: its
pages are stamped with the dates the messages were written, not the clock's, and mapped into no
working set. Each page records where it came from (`source_id`), so that writing the same
conversation again adds only the messages not stored yet: importing twice adds nothing, and a
conversation that grew since adds its new messages.

A long conversation is written in transactions of at most BATCH_PAGES pages, so that a server
using the same database waits for one batch at a time, never for the whole import; a run stopped
between batches is completed by the next, which skips what the batches before it stored.
"""

import json
import math
from collections.abc import Sequence

from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import NewPage, PageType, Role
from memvm.engine.paging.memory import Writer, fresh_page_id, refuse_too_long
from memvm.engine.paging.pages import insert_page
from memvm.engine.paging.projects import EVERYWHERE
from memvm.engine.sessions import touch_session
from memvm.engine.storage.api import Reads
from memvm.engine.storage.statements import statement
from pydantic import BaseModel, Field

# Metadata keys a history page carries: who it came from, the message's id there, and the title
# of its conversation (what a person remembers a conversation by).
SOURCE = "source"
SOURCE_ID = "source_id"
CONVERSATION = "conversation"

BATCH_PAGES = 500

_STORED_METADATA = statement(
    "history_write.stored metadata",
    "SELECT metadata FROM pages WHERE namespace = :namespace AND session = :session AND type = :type",
)


class HistoryMessage(BaseModel):
    """One message of a past conversation, as a writer hands it over."""

    role: Role
    content: str = Field(min_length=1)
    created_at: float
    source_id: str = Field(min_length=1)


class HistoryWritten(BaseModel):
    """What writing a conversation's history did."""

    page_ids: list[str]
    already_there: int


async def stored_source_ids(conn: Reads, namespace: str, session: str) -> set[str]:
    """The source ids of the history pages `session` holds.

    Read from the metadata column and parsed here: the same statement on both backends, and a
    conversation's pages are few enough to read whole.
    """
    rows = await conn.all(
        _STORED_METADATA, namespace=namespace, session=session, type=PageType.TRANSCRIPT.value
    )
    found = (json.loads(row["metadata"]).get(SOURCE_ID) for row in rows)
    return {source_id for source_id in found if isinstance(source_id, str)}


async def write_history(
    writer: Writer,
    *,
    namespace: str,
    session: str,
    source: str,
    title: str | None,
    messages: Sequence[HistoryMessage],
    batch_pages: int = BATCH_PAGES,
    project: str | None = None,
) -> HistoryWritten:
    """Store the messages of `session` not stored yet, as redaction leaves them, as pages of
    `project`, `batch_pages` to a write transaction."""
    for message in messages:
        refuse_too_long(writer.config, message.content)
    redaction = writer.redaction
    messages = [redaction.fields(message, "content", "source_id") for message in messages]
    title = redaction.optional(title)
    for message in messages:
        if not math.isfinite(message.created_at):
            raise InvalidArgument(
                f"The message {message.source_id!r} is dated {message.created_at}, which is not a time; "
                "give each message the time it was written, in seconds since the epoch."
            )
    async with writer.db.read(namespace) as conn:
        known = await stored_source_ids(conn, namespace, session)
    new = _unique([message for message in messages if message.source_id not in known])
    pages = [_page(message, source, title) for message in new]
    # Every page is measured before the first is written: one over the limit writes nothing.
    all_levels = await writer.levels_off_loop(pages)
    page_ids: list[str] = []
    for start in range(0, len(new), batch_pages):
        batch = slice(start, start + batch_pages)
        async with writer.db.write(namespace) as conn:
            # Another import of the same file may have written some of them since the read above.
            known = await stored_source_ids(conn, namespace, session)
            state = await touch_session(
                conn, namespace, session, conn.now, writer.config.turn_idle_seconds, by_host=True
            )
            for message, page, levels in zip(new[batch], pages[batch], all_levels[batch], strict=True):
                if message.source_id in known:
                    continue
                page_id = await fresh_page_id(conn, namespace, PageType.TRANSCRIPT)
                # `now` stamps both created_at and last_access: an old message was last used when
                # it was written, so a large import does not crowd the recently used pages out of
                # the manifest.
                await insert_page(
                    conn,
                    namespace=namespace,
                    session=session,
                    page_id=page_id,
                    page=page,
                    levels=levels,
                    turn=state.turn,
                    now=message.created_at,
                    project=project or EVERYWHERE,
                )
                page_ids.append(page_id)
    return HistoryWritten(page_ids=page_ids, already_there=len(messages) - len(page_ids))


def _unique(messages: list[HistoryMessage]) -> list[HistoryMessage]:
    """The first message of each source id: a source that repeats one is stored once."""
    seen: set[str] = set()
    kept = []
    for message in messages:
        if message.source_id not in seen:
            seen.add(message.source_id)
            kept.append(message)
    return kept


def _page(message: HistoryMessage, source: str, title: str | None) -> NewPage:
    metadata: dict[str, str] = {SOURCE: source, SOURCE_ID: message.source_id}
    if title:
        metadata[CONVERSATION] = title
    return NewPage(
        content=message.content,
        type=PageType.TRANSCRIPT,
        role=message.role,
        provenance=message.role.value,
        metadata=metadata,
    )
