"""What a person's view of one namespace reads (the browser view), as one object: each call is its
own read of that namespace, which knows its time, so the view never opens a transaction itself nor
forgets the namespace (see view.py for the screens and why they are paged by key).
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from memvm.engine import memory_screens, view
from memvm.engine.models.pages import PageType
from memvm.engine.operations.transfer import export_read
from memvm.engine.storage.api import Database

# A session's logs, each a screen at a time: the working set's changes, the values bound, the
# guards' verdicts.
SESSION_LOGS: dict[str, Callable[..., Awaitable[view.Screen[Any]]]] = {
    "mutations": view.mutations,
    "bindings": view.bindings,
    "verdicts": view.verdicts,
}


@dataclass(frozen=True)
class NamespaceView:
    db: Database
    namespace: str

    async def sessions(self, *, before: str | None) -> view.Screen[view.SessionRow]:
        async with self.db.read(self.namespace) as conn:
            return await view.sessions(conn, self.namespace, before=before)

    async def pages(
        self,
        *,
        session: str | None,
        page_type: PageType | None,
        pinned_only: bool,
        before: str | None,
        limit: int,
    ) -> view.Screen[view.PageRow]:
        """A screen of live pages, newest first."""
        async with self.db.read(self.namespace) as conn:
            return await view.pages(
                conn,
                self.namespace,
                session=session,
                page_type=page_type,
                pinned_only=pinned_only,
                before=before,
                limit=limit,
            )

    async def notes(self, *, before: str | None) -> view.Screen[memory_screens.NoteRow]:
        """A screen of what was remembered, pinned first."""
        async with self.db.read(self.namespace) as conn:
            return await memory_screens.notes(conn, self.namespace, before=before)

    async def conversations(self, *, before: str | None) -> view.Screen[memory_screens.ConversationRow]:
        """A screen of conversations, the latest first."""
        async with self.db.read(self.namespace) as conn:
            return await memory_screens.conversations(conn, self.namespace, before=before)

    async def thread(self, session: str, *, after: str | None) -> view.Screen[memory_screens.MessageRow]:
        """A screen of one conversation, oldest message first."""
        async with self.db.read(self.namespace) as conn:
            return await memory_screens.thread(conn, self.namespace, session, after=after)

    async def page_count(self) -> int:
        async with self.db.read(self.namespace) as conn:
            return await view.page_count(conn, self.namespace)

    async def pinned_among(self, page_ids: list[str]) -> set[str]:
        async with self.db.read(self.namespace) as conn:
            return await view.pinned_among(conn, self.namespace, page_ids)

    async def tools(self, *, before: str | None) -> view.Screen[view.ToolRow]:
        async with self.db.read(self.namespace) as conn:
            return await view.tools(conn, self.namespace, before=before)

    async def version(self) -> str:
        """A token that changes whenever anything the view shows changes."""
        async with self.db.read(self.namespace) as conn:
            return await view.version(conn, self.namespace)

    async def session_log(self, log: str, session: str, *, before: str | None) -> view.Screen[Any]:
        """A screen of one of `session`'s logs (SESSION_LOGS)."""
        async with self.db.read(self.namespace) as conn:
            return await SESSION_LOGS[log](conn, self.namespace, session, before=before)

    async def export(self, write: Callable[[list[str]], Awaitable[None]]) -> int:
        """The namespace's export, from one snapshot, handed to `write` a batch of lines at a time."""
        async with self.db.read(self.namespace) as conn:
            return await export_read(conn, self.namespace, write)
