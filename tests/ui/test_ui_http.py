"""`memvm ui` as a user runs it: the real command on a free loopback port, its printed URL, and a
real HTTP client; what it changes is checked in the database file."""

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.models import IngestMessage, NewPage, PageType, Role

from tests.conftest import db_rows
from tests.ui.seed import seed

MEMVM = Path(sys.executable).with_name("memvm")
NS = "default"


@pytest.fixture
def served(db_url: str) -> Iterator[tuple[str, str, str]]:
    """(base URL, token, database) of a running `memvm ui`, on each backend."""
    db = db_url
    seed(db, "our staging cluster is heron <script>alert(1)</script>", "Noted: heron.")
    process = subprocess.Popen(
        [str(MEMVM), "ui", "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.match(r"(http://127\.0\.0\.1:\d+)/#token=([A-Za-z0-9_\-]+)$", line.strip())
        assert found, line
        yield found.group(1), found.group(2), db
    finally:
        process.terminate()
        process.wait(timeout=30)


def client(base: str, token: str | None = None) -> httpx2.Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx2.Client(base_url=base, headers=headers, timeout=30)


def test_no_data_without_the_token_nor_to_a_foreign_host_nor_changes_from_another_origin(served):
    base, token, _ = served
    with client(base) as anonymous:
        assert anonymous.get("/api/overview").status_code == 401
        assert anonymous.get("/api/pages/deploy-note").status_code == 401
        assert anonymous.get("/api/export").status_code == 401
        assert anonymous.get("/api/overview", headers={"authorization": "Bearer wrong"}).status_code == 401
        # The page and its assets hold no data; the token arrives in the fragment, never sent here.
        page = anonymous.get("/")
        assert page.status_code == 200 and '<script src="static/app.js"' in page.text
        assert "set-cookie" not in page.headers
        assert "default-src 'self'" in page.headers["content-security-policy"]
    with client(base, token) as user:
        assert user.get("/api/overview", headers={"host": "evil.example"}).status_code == 400
        assert user.get("/api/overview", headers={"host": "127.0.0.1.evil.example:80"}).status_code == 400
        # Another local port is still this machine (an SSH forward lands there).
        assert user.get("/api/overview", headers={"host": "localhost:9000"}).status_code == 200
        pin = "/api/pages/deploy-note/pin"
        assert (
            user.post(pin, json={"pinned": True}, headers={"origin": "http://evil.example"}).status_code
            == 403
        )
        assert user.post(pin, json={"pinned": True}).status_code == 403  # no Origin at all
        assert user.get(pin).status_code == 405


def test_bad_requests_get_one_sentence(served):
    base, token, _ = served
    with client(base, token) as user:
        for params in (
            {"before": str(10**30)},
            {"before": "abc"},
            {"type": "gossip"},
            {"pinned": "yes"},
            {"limit": "１"},
            {"limit": "1_000"},
        ):
            refused = user.get("/api/pages", params=params)
            assert refused.status_code == 400, params
            assert refused.json()["error"].endswith("."), params
        deep = "[" * 100_000 + "]" * 100_000
        changed = user.post("/api/pages/deploy-note/pin", content=deep, headers={"origin": base})
        assert changed.status_code == 400 and changed.json() == {"error": "Send a JSON object."}
        huge = user.post("/api/pages/deploy-note/edit", content=b" " * 2_000_000, headers={"origin": base})
        assert huge.status_code == 400 and "at most" in huge.json()["error"]


def test_memory_pages_levels_search_and_context_read_as_stored(served):
    base, token, _ = served
    with client(base, token) as user:
        overview = user.get("/api/overview").json()
        assert overview["pages"] == 3 and [s["session"] for s in overview["sessions"]] == ["s1"]

        first = user.get("/api/pages", params={"limit": 2}).json()
        assert [p["page_id"] for p in first["pages"]] == ["deploy-note", "msg_000002"]
        rest = user.get("/api/pages", params={"limit": 2, "before": first["next"]}).json()
        assert [p["page_id"] for p in rest["pages"]] == ["msg_000001"] and rest["next"] is None
        notes = user.get("/api/pages", params={"type": "note"}).json()["pages"]
        assert [p["page_id"] for p in notes] == ["deploy-note"]

        page = user.get("/api/pages/msg_000001").json()
        assert page["levels"]["full"] == "our staging cluster is heron <script>alert(1)</script>"
        assert (
            set(page["levels"]) == {"full", "reduced", "abstract", "reference"} and page["editable"] is False
        )

        hits = user.get("/api/search", params={"q": "argo"}).json()["results"]
        assert hits[0]["page_id"] == "deploy-note" and hits[0]["pinned"] is False
        # Search keeps to the filters beside it.
        for params, found in (
            ({"type": "transcript"}, []),
            ({"session": "elsewhere"}, []),
            ({"pinned": "1"}, []),
        ):
            narrowed = user.get("/api/search", params={"q": "argo", **params}).json()["results"]
            assert [hit["page_id"] for hit in narrowed] == found, params
        same = user.get("/api/search", params={"q": "argo", "type": "note", "session": "s1"}).json()[
            "results"
        ]
        assert [hit["page_id"] for hit in same] == ["deploy-note"]

        context = user.get("/api/sessions/s1/context").json()
        assert "deploy-note" in context["context"] and context["entries"]
        drawn = context["reserved_tokens"] + context["page_tokens"] + context["free_tokens"]
        assert drawn == context["budget_tokens"]
        log = user.get("/api/sessions/s1/mutations").json()["mutations"]
        assert any(m["page_id"] == "deploy-note" and m["kind"] == "map" for m in log)

        assert user.get("/api/pages/no-such-page").status_code == 404
        refused = user.get("/api/pages", params={"type": "gossip"})
        assert refused.status_code == 400 and "type must be one of" in refused.json()["error"]


def test_pin_edit_and_forget_change_the_database(served):
    base, token, db = served
    origin = {"origin": base}
    with client(base, token) as user:
        assert (
            user.post("/api/pages/msg_000001/pin", json={"pinned": True}, headers=origin).json()["pinned"]
            is True
        )
        was = user.get("/api/pages/deploy-note").json()["fingerprint"]
        change = {"content": "Deploys go through flux now.", "was": was}
        assert user.post("/api/pages/deploy-note/edit", json=change, headers=origin).status_code == 200
        # A second edit from the same starting text would overwrite the first unseen: refused.
        stale = user.post("/api/pages/deploy-note/edit", json={**change, "content": "argo"}, headers=origin)
        assert stale.status_code == 409 and "changed since you opened it" in stale.json()["error"]
        transcript = user.post(
            "/api/pages/msg_000002/edit", json={"content": "rewritten", "was": ""}, headers=origin
        )
        assert transcript.status_code == 400 and "Only remembered notes" in transcript.json()["error"]
        unconfirmed = user.post("/api/pages/msg_000002/forget", json={}, headers=origin)
        assert unconfirmed.status_code == 400
        assert user.post("/api/pages/msg_000002/forget", json={"confirm": True}, headers=origin).json()[
            "deleted"
        ]

    pages = dict(db_rows(db, "SELECT page_id, pinned FROM pages"))
    # The view's pin is the namespace's: it maps the page into no session of its own.
    [viewer_mapped] = db_rows(db, "SELECT count(*) FROM working_set WHERE session = 'memvm-ui'")
    [(note,)] = db_rows(
        db, "SELECT t.content FROM pages p JOIN page_texts t USING (rowid) WHERE p.page_id = 'deploy-note'"
    )
    assert pages == {"msg_000001": 1, "deploy-note": 0}
    assert viewer_mapped == (0,)
    assert note == "Deploys go through flux now."


def test_export_and_a_version_that_follows_another_writer(served):
    base, token, db = served
    with client(base, token) as user:
        exported = user.get("/api/export")
        assert exported.headers["content-disposition"] == 'attachment; filename="memvm-default.jsonl"'
        lines = exported.text.splitlines()
        assert sum(1 for line in lines if '"deploy-note"' in line) >= 1
        assert all(json.loads(line) for line in lines)
        # The same lines as the command line's export of the namespace, header's time aside.
        command = subprocess.run(
            [str(MEMVM), "export", "--db", str(db), "--namespace", NS],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.splitlines()
        assert lines[1:] == command[1:] and len(lines) > 3
        before = user.get("/api/version").json()["version"]

        async def write() -> None:
            engine = await Engine.open(db, EngineConfig())
            try:
                await engine.ingest(
                    namespace=NS, session="s2", messages=[IngestMessage(role=Role.USER, content="hi")]
                )
            finally:
                await engine.close()

        anyio.run(write)
        assert user.get("/api/version").json()["version"] != before
        newest = user.get("/api/overview").json()["sessions"][0]
        assert newest["session"] == "s2"


def test_guard_verdicts_are_listed_with_their_reasons(tmp_path):
    db = tmp_path / "m.db"
    seed(db, "book a table for four", "Which time?")

    async def check() -> None:
        engine = await Engine.open(db, EngineConfig())
        try:
            for _ in range(3):
                await engine.check_tool_call(namespace=NS, session="s1", tool="book_table", args={"party": 4})
        finally:
            await engine.close()

    anyio.run(check)
    process = subprocess.Popen([str(MEMVM), "ui", "--db", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        base, token = re.match(r"(http://[^/]+)/#token=(\S+)", process.stdout.readline().strip()).groups()
        with client(base, token) as user:
            verdicts = user.get("/api/sessions/s1/verdicts").json()["verdicts"]
    finally:
        process.terminate()
        process.wait(timeout=30)
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
        seed(db, "hello", "hi")
    done = subprocess.run(
        [str(MEMVM), "ui", "--db", str(db), *extra], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1 and said in done.stderr
    assert "Traceback" not in done.stderr


def test_read_only_shows_memory_and_refuses_every_change(tmp_path):
    db = tmp_path / "m.db"
    seed(db, "hello", "hi")
    before = db.read_bytes()
    process = subprocess.Popen(
        [str(MEMVM), "ui", "--db", str(db), "--read-only"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        base, token = re.match(r"(http://[^/]+)/#token=(\S+)", process.stdout.readline().strip()).groups()
        with client(base, token) as user:
            overview = user.get("/api/overview").json()
            assert overview["read_only"] is True and overview["pages"] == 3
            refused = user.post("/api/pages/deploy-note/pin", json={"pinned": True}, headers={"origin": base})
            assert refused.status_code == 403 and "--read-only" in refused.json()["error"]
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert db.read_bytes() == before


def test_an_edit_keeps_the_notes_expiry_and_shows_what_it_replaced(served):
    base, token, db = served

    async def remember_expiring() -> float | None:
        engine = await Engine.open(db)
        try:
            page = NewPage(content="Door code 1234 this week.", type=PageType.NOTE, provenance="model")
            stored = await engine.remember(namespace=NS, session="s", page=page, key="door", ttl_seconds=3600)
            return stored.expires_at
        finally:
            await engine.close()

    expires_at = anyio.run(remember_expiring)
    with client(base, token) as user:
        opened = user.get("/api/pages/door").json()
        change = {"content": "Door code 9876 this week.", "was": opened["fingerprint"]}
        assert user.post("/api/pages/door/edit", json=change, headers={"origin": base}).status_code == 200
        edited = user.get("/api/pages/door").json()
    assert opened["version"] == 1 and opened["versions"] == [] and opened["expires_at"] == expires_at
    assert edited["version"] == 2 and [v["content"] for v in edited["versions"]] == [
        "Door code 1234 this week."
    ]
    # The edit kept the expiry, give or take the moments between the two writes.
    assert edited["expires_at"] is not None and abs(edited["expires_at"] - expires_at) < 60
