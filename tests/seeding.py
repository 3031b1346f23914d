"""Memory written through the engine, as the tools write it, for the tests that read it back
(through the command line, the browser view, a server, or the engine itself).

A fill is an async function of an open engine; `seed` opens a database (creating and migrating a
new one), applies its fills in order and closes it:

    seed(db, chat_with_note("hello", "hi"), bindings("x" * 900_000, tool="dump"))
    await fill(engine, notes("the spare key is under the blue pot", keys=["key"]))
"""

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.clock import Clock
from memvm.engine.models.pages import Level, NewPage, PageType, Role
from memvm.engine.models.procedures import ToolOutcome
from memvm.engine.models.writes import IngestMessage

from tests.conftest import NS, assistant, long_text, note, user

Fill = Callable[[Engine], Awaitable[Any]]
Database = TypeVar("Database", Path, str)


@asynccontextmanager
async def opened(
    db: Path | str, config: EngineConfig | None = None, *, clock: Clock | None = None
) -> AsyncIterator[Engine]:
    """An engine on `db` (created and migrated if new), closed on the way out."""
    engine = await Engine.open(db, config, clock=clock)
    try:
        yield engine
    finally:
        await engine.close()


async def fill(engine: Engine, *fills: Fill) -> None:
    """Apply `fills` to an open engine, in order."""
    for each in fills:
        await each(engine)


async def write(
    db: Path | str, *fills: Fill, config: EngineConfig | None = None, clock: Clock | None = None
) -> None:
    """Open `db`, apply `fills`, close it: for tests that already run in an event loop."""
    async with opened(db, config, clock=clock) as engine:
        await fill(engine, *fills)


def seed(
    db: Database, *fills: Fill, config: EngineConfig | None = None, clock: Clock | None = None
) -> Database:
    """Open `db`, apply `fills`, close it; `db` back. With no fills: an empty, migrated database."""
    anyio.run(partial(write, db, *fills, config=config, clock=clock))
    return db


def notes(
    *contents: str,
    keys: Sequence[str] | None = None,
    namespace: str = NS,
    session: str = "s",
    ttl_seconds: float | None = None,
    **fields: Any,
) -> Fill:
    """Remembered notes, one per text (`fields` for each page: importance, pinned...); under `keys`
    (one each) if given, else numbered by memvm; expiring after `ttl_seconds` if given."""

    async def remember(engine: Engine) -> None:
        for n, content in enumerate(contents):
            key = keys[n] if keys is not None else None
            page = note(content, **fields)
            await engine.session(namespace, session).remember(page=page, key=key, ttl_seconds=ttl_seconds)

    return remember


def transcript(*contents: str, namespace: str = NS, session: str = "s", batch: int = 100) -> Fill:
    """A conversation of the user's messages, ingested `batch` at a time as a host delivers them."""

    async def ingest(engine: Engine) -> None:
        for start in range(0, len(contents), batch):
            messages = [
                IngestMessage(role=Role.USER, content=text) for text in contents[start : start + batch]
            ]
            await engine.session(namespace, session).ingest(messages=messages)

    return ingest


def bindings(*values: Any, tool: str, namespace: str = NS, session: str = "s1") -> Fill:
    """Tool results bound as $vN values, one call of `tool` each (its argument `i` numbers them)."""

    async def bind(engine: Engine) -> None:
        for i, value in enumerate(values):
            await engine.session(namespace, session).bind_value(tool=tool, args={"i": i}, value=value)

    return bind


def chat_with_note(first_prompt: str, reply: str, *, namespace: str = NS) -> Fill:
    """A two-message conversation in session s1 (`msg_000001`, `msg_000002`) and the user's note
    `deploy-note` ("Deploys go through argo."), faulted into s1's working set."""

    async def chat(engine: Engine) -> None:
        messages = [
            IngestMessage(role=Role.USER, content=first_prompt),
            IngestMessage(role=Role.ASSISTANT, content=reply),
        ]
        await engine.session(namespace, "s1").ingest(messages=messages)
        page = NewPage(content="Deploys go through argo.", type=PageType.NOTE, provenance="user")
        await engine.session(namespace, "s1").remember(page=page, key="deploy-note")
        await engine.session(namespace, "s1").page_fault(page_id="deploy-note")

    return chat


def every_table(namespaces: Iterable[str]) -> Fill:
    """Memory in each namespace that gives every table that holds memory rows: a conversation,
    notes (a rewritten one, an expiring one, a faulted and pinned one), bound values, guard checks,
    a failed and a fixed tool call, a hook event. Text with accents, quotes, tabs and newlines."""

    async def everything(engine: Engine) -> None:
        for ns in namespaces:
            s = engine.session(ns, f"{ns}-trip")
            await s.ingest(
                messages=[
                    user(f"Book {ns} a table for 4 at 19:30, budget 1,800 — naïve café ✓"),
                    assistant('Looking for a table.\nQuotes "inside" and a tab\tnow.'),
                ],
            )
            stored = await s.remember(page=note(long_text(f"{ns} boiler", 30), importance=0.3))
            await s.remember(page=note("The user prefers window seats."), key="seats")
            # A rewrite keeps the first as a superseded version; a page that expires in a month.
            await s.remember(page=note("The user prefers window seats, aisle if not."), key="seats")
            await s.remember(page=note("Gate code 4471 for the trip."), key="gate", ttl_seconds=30 * 86_400)
            await s.page_fault(page_id=stored.page_id, target_level=Level.REDUCED)
            await s.pin_page(page_id=stored.page_id, pinned=True)
            await s.bind_value(tool="fx_rate", args={"pair": "EURUSD"}, value=1.0862, name="eur_usd")
            await s.bind_value(tool="menu", args={}, value={"starters": [4.5, 7.25]})
            await s.check_tool_call(tool="pay", args={"usd": 123.456})
            await s.check_ungrounded(args={"amount": 99})
            failed = ToolOutcome(
                tool="book_table",
                args={"party": 4, "time": "7:30pm"},
                outcome="failure",
                error_type="ValidationError",
                error_message="time must be HH:MM",
                duration_ms=12.5,
            )
            await s.record_tool_outcome(call=failed)
            fixed = ToolOutcome(
                tool="book_table",
                args={"party": 4, "time": "19:30"},
                outcome="success",
                result=1.0 / 3.0,
                goal="book dinner",
            )
            await s.record_tool_outcome(call=fixed)
            await engine.hook_events.record(
                namespace=s.namespace,
                session=s.session,
                host="claude-code",
                digest=f"{ns}-event",
                event="PreToolUse",
                answer="denied",
            )

    return everything
