"""Clients that write through a running server, and the check that every acknowledged write is on disk.

Shared by the crash trials (the server is killed under the writers) and the multi-process run
(several servers write one file). Each write is one of remember, ingest and record_tool_outcome,
so pages, FTS rows and the procedural tables are all exercised.
"""

import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from memvm.engine.operations.doctor import COUNTS_DRIFT

from tests.conftest import backend_of, db_rows

# What a dying server looks like from the client side.
CONNECTION_LOST = (
    OSError,
    httpx2.HTTPError,
    MCPError,
    ExceptionGroup,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
)


@dataclass
class Acked:
    """What the clients saw acknowledged, to look for in the file afterwards, and every tool error."""

    keys: set[str] = field(default_factory=set)
    page_ids: set[str] = field(default_factory=set)
    call_ids: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.keys) + len(self.page_ids) + len(self.call_ids)


async def write_one(client: Client, writer: str, n: int, acked: Acked) -> None:
    """The n-th write of one writer; a tool error is recorded, never ignored."""
    kind = n % 3
    if kind == 0:
        key = f"{writer}-{n}-{random.getrandbits(32):08x}"
        result = await client.call_tool("remember", {"content": f"note {key} about pumps", "key": key})
        if not result.is_error:
            acked.keys.add(key)
    elif kind == 1:
        messages = [{"role": "user", "content": f"{writer} says {n}"}]
        result = await client.call_tool("ingest", {"messages": messages, "session": writer})
        if not result.is_error:
            acked.page_ids.update(result.structured_content["page_ids"])
    else:
        call = {"tool": "get_rate", "args": {"n": n}, "outcome": "success", "result": n, "session": writer}
        result = await client.call_tool("record_tool_outcome", call)
        if not result.is_error:
            acked.call_ids.add(result.structured_content["call_id"])
    if result.is_error:
        acked.errors.append(result.content[0].text if result.content else "(no text)")


async def write(url: str, writer: str, acked: Acked, count: int) -> None:
    """`count` writes through one client session."""
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for n in range(count):
            await write_one(client, writer, n, acked)


async def write_until_killed(url: str, writer: str, acked: Acked) -> None:
    """Write in a loop until the connection dies."""
    try:
        await write(url, writer, acked, count=10_000)
    except CONNECTION_LOST:
        return  # the server was killed: whatever was not acknowledged may or may not be there


def check_file(db: Path | str, acked: Acked) -> tuple[int, bool]:
    """How many acknowledged writes are missing, and whether the database is sound: SQLite's two
    integrity checks, or on PostgreSQL the search statistics and index agreeing with the pages."""
    if backend_of(db) == "postgresql":
        pages = {row[0] for row in db_rows(db, "SELECT page_id FROM pages")}
        calls = {row[0] for row in db_rows(db, "SELECT call_id FROM tool_calls")}
        drift = db_rows(db, COUNTS_DRIFT.texts["sqlite"])
        unindexed = db_rows(
            db,
            "SELECT count(*) FROM pages p WHERE NOT EXISTS (SELECT 1 FROM page_terms t WHERE t.page_rowid = p.rowid)",
        )
        lost = len(acked.keys - pages) + len(acked.page_ids - pages) + len(acked.call_ids - calls)
        return lost, drift == [(0,)] and unindexed == [(0,)]
    with sqlite3.connect(db) as conn:
        pages = {row[0] for row in conn.execute("SELECT page_id FROM pages")}
        calls = {row[0] for row in conn.execute("SELECT call_id FROM tool_calls")}
        sound = conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        try:
            conn.execute("INSERT INTO pages_fts (pages_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError:
            sound = False
    lost = len(acked.keys - pages) + len(acked.page_ids - pages) + len(acked.call_ids - calls)
    return lost, sound
