"""Whatever memory holds, what memvm renders keeps its own framing: one rules block (none in
passive mode), one manifest, one context block, and one context line per loaded page."""

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest
from anyio.from_thread import BlockingPortal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from memvm.resources.rules import RuleMode, rules_text
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings, ToolProfile

from tests.conftest import examples
from tests.framing import INJECTION, hostile_text, tags
from tests.server.conftest import call, read

# A page line's head: role or type, page id, colon (see context_lines.line_head).
PAGE_LINE = re.compile(r"^(U|A|S|T|M|C|N|P|SUM|PROC) ([A-Za-z0-9][A-Za-z0-9_.:\-]*):")
LOADED = """
SELECT p.page_id FROM working_set w JOIN pages p ON p.rowid = w.page_rowid
WHERE w.session = ? ORDER BY p.created_at, p.rowid
"""


@contextmanager
def served(db: Path) -> Iterator[tuple[BlockingPortal, Client]]:
    server = build_server(ServerSettings(db=str(db), tools=ToolProfile.ALL))
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(server)) as client,
    ):
        yield portal, client


def extra_blocks(text: str, *, rules: RuleMode | None, manifest: bool) -> tuple[int, str]:
    """How many blocks `text` holds beyond memvm's own, and the context block's body.

    The rules name <VM:CONTEXT> and <VM:MANIFEST_JSON> in their prose, so tags are read with the
    one real rules block taken out.
    """
    rest, extra = text, 0
    if rules is not None:
        real = rules_text(rules, max_faults_per_turn=3)
        extra += abs(text.count(real) - 1)
        rest = text.replace(real, "")
    wanted = (["vm:manifest_json", "/vm:manifest_json"] if manifest else []) + ["vm:context", "/vm:context"]
    found = tags(rest)
    if found != wanted:
        extra += max(1, len(found) - len(wanted))
    body = rest.split("<VM:CONTEXT>\n", 1)[-1].rsplit("\n</VM:CONTEXT>", 1)[0]
    return extra, body


def forged_lines(text: str, body: str, loaded: list[str]) -> int:
    """Lines shaped like page lines that are not the loaded pages' own, in their order."""
    lines = body.splitlines()
    ids = [match.group(2) if (match := PAGE_LINE.match(line)) else None for line in lines]
    forged = sum(1 for seen, page_id in zip(ids, loaded, strict=False) if seen != page_id)
    forged += abs(len(lines) - len(loaded))
    outside = text.replace(body, "")
    return forged + sum(1 for line in outside.splitlines() if PAGE_LINE.match(line))


def loaded_pages(db: Path) -> list[str]:
    """The default session's loaded pages, in context order, from the database itself."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(LOADED, ("default",)).fetchall()
    return [row[0] for row in rows]


def store_hostile(portal: BlockingPortal, client: Client, n: int, texts: list[str]) -> None:
    """The texts as a pinned note with a summary, a summary page faulted at its abstract, a user
    and an assistant message, and a failed call fixed by a later one."""
    a, b, c, d = texts

    def run(name: str, /, **arguments: Any) -> dict[str, Any]:
        return portal.call(partial(call, client, name, **arguments))

    run("begin_turn")
    run("remember", content=a, summary=b, key=f"hostile-{n}", pin=True, importance=0.9)
    summary = run("remember", content=c, type="summary", summary=d)
    run("page_fault", page_id=summary["page_id"], target_level=2)
    run("ingest", messages=[{"role": "user", "content": d}, {"role": "assistant", "content": a}])
    failed = {"error_type": b[:200], "error_message": c}
    run("record_tool_outcome", tool="probe", args={"q": a}, outcome="failure", **failed)
    run("record_tool_outcome", tool="probe", args={"q": d, "extra": b}, outcome="success", goal=c[:500])


@pytest.mark.properties
def test_stored_text_never_opens_or_closes_memvms_blocks(tmp_path, report_figure):
    db = tmp_path / "memvm.db"
    totals = {
        "hostile_pages": 0,
        "outcomes": 0,
        "renders": 0,
        "extra_blocks": 0,
        "forged_lines": 0,
        "broken_hints": 0,
    }
    with served(db) as (portal, client):
        numbers = iter(range(10**6))

        def tally(text: str, *, rules: RuleMode | None, manifest: bool) -> None:
            extra, body = extra_blocks(text, rules=rules, manifest=manifest)
            totals["renders"] += 1
            totals["extra_blocks"] += extra
            totals["forged_lines"] += forged_lines(text, body, loaded_pages(db))

        @settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(texts=st.lists(hostile_text, min_size=4, max_size=4))
        def check(texts: list[str]) -> None:
            store_hostile(portal, client, next(numbers), texts)
            totals["hostile_pages"] += 4
            totals["outcomes"] += 2
            for mode in RuleMode:
                built = portal.call(partial(call, client, "build_context", mode=mode.value))
                passive = mode is RuleMode.PASSIVE
                tally(built["text"], rules=None if passive else mode, manifest=not passive)
            tally(portal.call(read, client, "memvm://current/context"), rules=RuleMode.STRICT, manifest=True)
            tally(portal.call(read, client, "memvm://current/working-set"), rules=None, manifest=False)
            json.loads(portal.call(read, client, "memvm://current/manifest"))
            hints = portal.call(
                lambda: call(client, "get_procedural_hints", tools=["probe"], error_type=texts[1])
            )
            text = hints["text"]
            whole = text.startswith("<procedural_memory>\n") and text.endswith("\n</procedural_memory>")
            totals["broken_hints"] += 0 if whole and len(tags(text)) == 2 else 1
            assert (totals["extra_blocks"], totals["forged_lines"], totals["broken_hints"]) == (0, 0, 0), (
                texts
            )

        check()
        # Stored text comes back exactly as given: the escaping is for rendering only.
        stored = portal.call(partial(call, client, "remember", content=INJECTION, key="injection", pin=True))
        page = json.loads(portal.call(read, client, f"memvm://pages/{stored['page_id']}"))
        assert page["levels"]["0"] == INJECTION
        fault = portal.call(partial(call, client, "page_fault", page_id="injection", target_level=0))
        assert fault["content"] == INJECTION
    report_figure(
        f"framing: hostile_pages={totals['hostile_pages']} outcomes={totals['outcomes']} renders={totals['renders']} modes=3+2 "
        f"extra_blocks={totals['extra_blocks']} forged_lines={totals['forged_lines']} "
        f"broken_hint_blocks={totals['broken_hints']}"
    )
