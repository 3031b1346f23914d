"""The browser view's HTTP API: the app `memvm ui` serves, built by the same code and asked through
an in-process ASGI transport; what it changes is checked in the database. The slow stage also asks
the real `memvm ui`, at the URL it prints, over HTTP on loopback.
"""

import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from memvm.engine import Engine
from memvm.engine.clock import ManualClock
from memvm.ui.cli import opened_view

from tests.commands import run, started
from tests.conftest import NS, db_rows, note
from tests.seeding import chat_with_note, notes, opened, seed, transcript, write

pytestmark = pytest.mark.anyio

TOKEN = "the-token-memvm-ui-made-at-start"
# The view answers in this process and over HTTP from the real command (slow stage).
BOTH_WAYS = pytest.mark.parametrize(
    "served", ["in-process", pytest.param("process", marks=pytest.mark.slow)], indirect=True
)


@dataclass(frozen=True)
class View:
    """A running view: where it answers, the token it was started with, and its database."""

    base: str
    token: str
    db: str
    transport: httpx2.AsyncBaseTransport | None  # the app itself, or None: real HTTP to `base`

    def client(self, token: str | None = None) -> httpx2.AsyncClient:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx2.AsyncClient(base_url=self.base, headers=headers, transport=self.transport, timeout=30)


@asynccontextmanager
async def viewing(db: Path | str, *, read_only: bool = False, way: str = "in-process") -> AsyncIterator[View]:
    """The view of `db`'s default namespace, as `memvm ui` serves it."""
    if way == "in-process":
        async with opened_view(str(db), NS, TOKEN, read_only=read_only) as app:
            yield View("http://127.0.0.1", TOKEN, str(db), httpx2.ASGITransport(app))
        return
    with started("ui", "--db", db, *(["--read-only"] if read_only else [])) as process:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        found = re.match(r"(http://127\.0\.0\.1:\d+)/#token=([A-Za-z0-9_\-]+)$", line)
        assert found, line
        yield View(found.group(1), found.group(2), str(db), None)
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
async def served(db_url: str, request: pytest.FixtureRequest) -> AsyncIterator[View]:
    """The view of a conversation and a note, on each backend; in this process unless the test
    asks for the real command too (BOTH_WAYS)."""
    await write(
        db_url, chat_with_note("our staging cluster is heron <script>alert(1)</script>", "Noted: heron.")
    )
    async with viewing(db_url, way=getattr(request, "param", "in-process")) as view:
        yield view


@BOTH_WAYS
async def test_no_data_without_the_token_nor_to_a_foreign_host_nor_changes_from_another_origin(served):
    async with served.client() as anonymous:
        assert (await anonymous.get("/api/overview")).status_code == 401
        assert (await anonymous.get("/api/pages/deploy-note")).status_code == 401
        assert (await anonymous.get("/api/export")).status_code == 401
        wrong = await anonymous.get("/api/overview", headers={"authorization": "Bearer wrong"})
        assert wrong.status_code == 401
        # The page and its assets hold no data; the token arrives in the fragment, never sent here.
        page = await anonymous.get("/")
        assert page.status_code == 200 and '<script src="static/app.js"' in page.text
        assert "set-cookie" not in page.headers
        assert "default-src 'self'" in page.headers["content-security-policy"]
    async with served.client(served.token) as user:
        assert (await user.get("/api/overview", headers={"host": "evil.example"})).status_code == 400
        rebound = await user.get("/api/overview", headers={"host": "127.0.0.1.evil.example:80"})
        assert rebound.status_code == 400
        # Another local port is still this machine (an SSH forward lands there).
        assert (await user.get("/api/overview", headers={"host": "localhost:9000"})).status_code == 200
        pin = "/api/pages/deploy-note/pin"
        foreign = await user.post(pin, json={"pinned": True}, headers={"origin": "http://evil.example"})
        assert foreign.status_code == 403
        assert (await user.post(pin, json={"pinned": True})).status_code == 403  # no Origin at all
        assert (await user.get(pin)).status_code == 405
    assert db_rows(served.db, "SELECT pinned FROM pages WHERE page_id = 'deploy-note'") == [(0,)]


async def test_bad_requests_get_one_sentence(served):
    base = served.base
    async with served.client(served.token) as user:
        for params in (
            {"before": str(10**30)},
            {"before": "abc"},
            {"type": "gossip"},
            {"pinned": "yes"},
            {"limit": "１"},
            {"limit": "1_000"},
        ):
            refused = await user.get("/api/pages", params=params)
            assert refused.status_code == 400, params
            assert refused.json()["error"].endswith("."), params
        deep = "[" * 100_000 + "]" * 100_000
        changed = await user.post("/api/pages/deploy-note/pin", content=deep, headers={"origin": base})
        assert changed.status_code == 400 and changed.json() == {"error": "Send a JSON object."}
        huge = await user.post(
            "/api/pages/deploy-note/edit", content=b" " * 2_000_000, headers={"origin": base}
        )
        assert huge.status_code == 400 and "at most" in huge.json()["error"]
    unchanged = "SELECT p.pinned, t.content FROM pages p JOIN page_texts t USING (rowid) WHERE p.page_id = ?"
    assert db_rows(served.db, unchanged, ("deploy-note",)) == [(0, "Deploys go through argo.")]


async def test_memory_pages_levels_search_and_context_read_as_stored(served):
    async with served.client(served.token) as user:
        overview = (await user.get("/api/overview")).json()
        assert overview["pages"] == 3 and [s["session"] for s in overview["sessions"]] == ["s1"]

        first = (await user.get("/api/pages", params={"limit": 2})).json()
        assert [p["page_id"] for p in first["pages"]] == ["deploy-note", "msg_000002"]
        rest = (await user.get("/api/pages", params={"limit": 2, "before": first["next"]})).json()
        assert [p["page_id"] for p in rest["pages"]] == ["msg_000001"] and rest["next"] is None
        notes = (await user.get("/api/pages", params={"type": "note"})).json()["pages"]
        assert [p["page_id"] for p in notes] == ["deploy-note"]

        page = (await user.get("/api/pages/msg_000001")).json()
        assert page["levels"]["full"] == "our staging cluster is heron <script>alert(1)</script>"
        assert (
            set(page["levels"]) == {"full", "reduced", "abstract", "reference"} and page["editable"] is False
        )

        hits = (await user.get("/api/search", params={"q": "argo"})).json()["results"]
        assert hits[0]["page_id"] == "deploy-note" and hits[0]["pinned"] is False
        # Search keeps to the filters beside it.
        for params, found in (
            ({"type": "transcript"}, []),
            ({"session": "elsewhere"}, []),
            ({"pinned": "1"}, []),
        ):
            narrowed = (await user.get("/api/search", params={"q": "argo", **params})).json()["results"]
            assert [hit["page_id"] for hit in narrowed] == found, params
        same = (await user.get("/api/search", params={"q": "argo", "type": "note", "session": "s1"})).json()
        assert [hit["page_id"] for hit in same["results"]] == ["deploy-note"]

        context = (await user.get("/api/sessions/s1/context")).json()
        assert "deploy-note" in context["context"] and context["entries"]
        drawn = context["reserved_tokens"] + context["page_tokens"] + context["free_tokens"]
        assert drawn == context["budget_tokens"]
        log = (await user.get("/api/sessions/s1/mutations")).json()["mutations"]
        assert any(m["page_id"] == "deploy-note" and m["kind"] == "map" for m in log)

        assert (await user.get("/api/pages/no-such-page")).status_code == 404
        refused = await user.get("/api/pages", params={"type": "gossip"})
        assert refused.status_code == 400 and "type must be one of" in refused.json()["error"]


async def test_pin_edit_and_forget_change_the_database(served):
    origin = {"origin": served.base}
    async with served.client(served.token) as user:
        pinned = await user.post("/api/pages/msg_000001/pin", json={"pinned": True}, headers=origin)
        assert pinned.json()["pinned"] is True
        was = (await user.get("/api/pages/deploy-note")).json()["fingerprint"]
        change = {"content": "Deploys go through flux now.", "was": was}
        assert (
            await user.post("/api/pages/deploy-note/edit", json=change, headers=origin)
        ).status_code == 200
        # A second edit from the same starting text would overwrite the first unseen: refused.
        stale = await user.post(
            "/api/pages/deploy-note/edit", json={**change, "content": "argo"}, headers=origin
        )
        assert stale.status_code == 409 and "changed since you opened it" in stale.json()["error"]
        transcript_edit = await user.post(
            "/api/pages/msg_000002/edit", json={"content": "rewritten", "was": ""}, headers=origin
        )
        assert (
            transcript_edit.status_code == 400 and "Only remembered notes" in transcript_edit.json()["error"]
        )
        unconfirmed = await user.post("/api/pages/msg_000002/forget", json={}, headers=origin)
        assert unconfirmed.status_code == 400
        forgotten = await user.post("/api/pages/msg_000002/forget", json={"confirm": True}, headers=origin)
        assert forgotten.json()["deleted"]

    db = served.db
    pages = dict(db_rows(db, "SELECT page_id, pinned FROM pages"))
    # The view's pin is the namespace's: it maps the page into no session of its own.
    [viewer_mapped] = db_rows(db, "SELECT count(*) FROM working_set WHERE session = 'memvm-ui'")
    [(content,)] = db_rows(
        db, "SELECT t.content FROM pages p JOIN page_texts t USING (rowid) WHERE p.page_id = 'deploy-note'"
    )
    assert pages == {"msg_000001": 1, "deploy-note": 0}
    assert viewer_mapped == (0,)
    assert content == "Deploys go through flux now."


@BOTH_WAYS
async def test_export_and_a_version_that_follows_another_writer(served):
    async with served.client(served.token) as user:
        exported = await user.get("/api/export")
        assert exported.headers["content-disposition"] == 'attachment; filename="memvm-default.jsonl"'
        lines = exported.text.splitlines()
        assert sum(1 for line in lines if '"deploy-note"' in line) >= 1
        assert all(json.loads(line) for line in lines)
        # The same lines as the command line's export of the namespace, header's time aside (the
        # export starts an event loop of its own, so it runs on a thread beside the test's).
        command = await anyio.to_thread.run_sync(lambda: run("export", "--db", served.db, "--namespace", NS))
        assert command.status == 0, command.stderr
        assert lines[1:] == command.stdout.splitlines()[1:] and len(lines) > 3
        before = (await user.get("/api/version")).json()["version"]

        await write(served.db, transcript("hi", session="s2"))
        assert (await user.get("/api/version")).json()["version"] != before
        newest = (await user.get("/api/overview")).json()["sessions"][0]
        assert newest["session"] == "s2"


async def test_a_download_leaves_out_a_page_that_has_expired(db_url):
    an_hour_ago = ManualClock(time.time() - 3600)
    await anyio.to_thread.run_sync(
        lambda: seed(db_url, notes("the gate code is 4417", keys=["gate"], ttl_seconds=60), clock=an_hour_ago)
    )
    await write(db_url, chat_with_note("our staging cluster is heron", "Noted: heron."))
    async with viewing(db_url) as view, view.client(view.token) as user:
        exported = await user.get("/api/export")
    assert exported.status_code == 200 and "heron" in exported.text and "4417" not in exported.text
    assert db_rows(db_url, "SELECT count(*) FROM pages WHERE page_id = 'gate'") == [(0,)]


async def test_guard_verdicts_are_listed_with_their_reasons(tmp_path):
    db = tmp_path / "m.db"

    async def book_three_times(engine: Engine) -> None:
        for _ in range(3):
            await engine.session(NS, "s1").check_tool_call(
                tool="book_table", args={"party": 4}, will_run=True
            )

    await write(db, chat_with_note("book a table for four", "Which time?"), book_three_times)
    async with viewing(db) as view, view.client(view.token) as user:
        verdicts = (await user.get("/api/sessions/s1/verdicts")).json()["verdicts"]
    assert [v["verdict"] for v in verdicts] == ["block", "warn", "allow"]
    assert verdicts[0]["tool"] == "book_table"
    assert "already ran with these arguments" in verdicts[0]["reasons"][0]["message"]


@pytest.mark.parametrize(
    ("case", "extra", "said"),
    [
        ("corrupt", (), "not a usable SQLite database"),
        ("empty", (), "there is no memvm database"),
        ("missing", (), "there is no memvm database"),
        ("port", ("--port", "70000"), "--port takes 0"),
        ("namespace", ("--namespace", 'bad"name'), "--namespace takes"),
        ("namespace-newline", ("--namespace", "team\n"), "--namespace takes"),
        ("host", ("--host", "0.0.0.0"), "loopback only"),
    ],
)
def test_memvm_ui_refuses_what_it_cannot_serve_in_one_line(tmp_path, case, extra, said):
    db = tmp_path / "m.db"
    if case == "corrupt":
        db.write_bytes(b"not a database " * 400)
    elif case == "empty":
        db.write_bytes(b"")
    elif case != "missing":
        seed(db, chat_with_note("hello", "hi"))
    assert said in run("ui", "--db", db, *extra).refusal()


async def test_read_only_shows_memory_and_refuses_every_change(tmp_path):
    db = tmp_path / "m.db"
    await write(db, chat_with_note("hello", "hi"))
    before = db.read_bytes()
    async with viewing(db, read_only=True) as view, view.client(view.token) as user:
        overview = (await user.get("/api/overview")).json()
        assert overview["read_only"] is True and overview["pages"] == 3
        refused = await user.post(
            "/api/pages/deploy-note/pin", json={"pinned": True}, headers={"origin": view.base}
        )
        assert refused.status_code == 403 and "--read-only" in refused.json()["error"]
    assert db.read_bytes() == before


async def test_an_edit_keeps_the_notes_expiry_and_shows_what_it_replaced(served):
    async with opened(served.db) as engine:
        page = note("Door code 1234 this week.")
        stored = await engine.session(NS, "s").remember(page=page, key="door", ttl_seconds=3600)
    expires_at = stored.expires_at
    async with served.client(served.token) as user:
        opened_page = (await user.get("/api/pages/door")).json()
        change = {"content": "Door code 9876 this week.", "was": opened_page["fingerprint"]}
        edit = await user.post("/api/pages/door/edit", json=change, headers={"origin": served.base})
        assert edit.status_code == 200
        edited = (await user.get("/api/pages/door")).json()
    assert opened_page["version"] == 1 and opened_page["versions"] == []
    assert opened_page["expires_at"] == expires_at
    assert edited["version"] == 2 and [v["content"] for v in edited["versions"]] == [
        "Door code 1234 this week."
    ]
    # The edit kept the expiry, give or take the moments between the two writes.
    assert edited["expires_at"] is not None and abs(edited["expires_at"] - expires_at) < 60


async def test_the_first_screen_lists_notes_and_conversations_and_writes_a_new_note(served):
    origin = {"origin": served.base}
    async with served.client(served.token) as user:
        notes = (await user.get("/api/notes")).json()
        assert [note["page_id"] for note in notes["notes"]] == ["deploy-note"] and notes["next"] is None
        [talk] = (await user.get("/api/conversations")).json()["conversations"]
        assert talk["session"] == "s1" and talk["title"] is None and talk["messages"] == 2
        assert talk["first_line"].startswith("our staging cluster is heron")
        thread = (await user.get("/api/conversations/s1")).json()
        assert [message["role"] for message in thread["messages"]] == ["user", "assistant"]
        assert thread["messages"][0]["text"] == "our staging cluster is heron <script>alert(1)</script>"

        written = await user.post(
            "/api/notes",
            json={
                "content": "Dentist: Dr. Okafor. token ghp_0123456789abcdefghijklmnopqrstuvwxyz",
                "key": "dentist",
            },
            headers=origin,
        )
        assert written.status_code == 200 and written.json() == {"page_id": "dentist", "created": True}
        again = await user.post("/api/notes", json={"content": "other", "key": "dentist"}, headers=origin)
        assert again.status_code == 400 and "exists" in again.json()["error"]
        brief = await user.post(
            "/api/notes", json={"content": "Parking in lot B", "expires_in_days": 2}, headers=origin
        )
        assert brief.status_code == 200
        for bad in ({"content": "  "}, {"content": "x", "expires_in_days": 0}, {"content": "x", "key": 5}):
            refused = await user.post("/api/notes", json=bad, headers=origin)
            assert refused.status_code == 400 and refused.json()["error"].endswith("."), bad
        listed = [note["page_id"] for note in (await user.get("/api/notes")).json()["notes"]]
        assert listed[1:] == ["dentist", "deploy-note"] and len(listed) == 3
        hits = (await user.get("/api/search", params={"q": "Okafor"})).json()["results"]
        assert hits and hits[0]["page_id"] == "dentist"
    [(text, provenance, expires)] = db_rows(
        served.db,
        "SELECT t.content, p.provenance, p.expires_at FROM pages p JOIN page_texts t USING (rowid) "
        "WHERE p.page_id = 'dentist'",
    )
    assert "ghp_0123456789abcdefghijklmnopqrstuvwxyz" not in text and text.startswith("Dentist: Dr. Okafor.")
    assert provenance == "memvm ui" and expires is None
    [(brief_expires, brief_created)] = db_rows(
        served.db, "SELECT expires_at, created_at FROM pages WHERE page_id = ?", (listed[0],)
    )
    assert brief_expires - brief_created == pytest.approx(2 * 86_400)
