"""The view's export downloads under pressure, on both backends: a bounded number at once, spools
that never pass their room, a download nobody reads cut and its spool freed, and every export read
through the engine's own connections. The app is the one `memvm ui` and `memvm serve` build,
asked in this process; a client that stops reading is an ASGI `send` that stops returning, as
uvicorn's does when the client's socket is full.
"""

import math
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial

import anyio
import httpx2
import pytest
from anyio.abc import TaskGroup
from memvm.engine import Engine
from memvm.ui.app import create_app
from memvm.ui.exports import ExportLimits, Exports
from memvm.ui.graceful import AnswerCut
from starlette.types import ASGIApp, Message

from tests.commands import run
from tests.conftest import backend_of, db_rows
from tests.seeding import notes, opened, write

pytestmark = pytest.mark.anyio

# One token per namespace.
TOKENS = {
    "token-of-alice-0123456789": "alice",
    "token-of-bob-0123456789ab": "bob",
    "token-of-carol-012345678": "carol",
}
ALICE, BOB, CAROL = TOKENS
BUSY = "An export is already running; try again when it ends."
# Long enough that nothing is cut unless a test asks for it.
PATIENT = ExportLimits(stall_s=600)


@dataclass
class Asked:
    """One download as its client saw it."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    answered: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    cut: bool = False
    gone: anyio.Event = field(default_factory=anyio.Event)

    def leave(self) -> None:
        """The client disconnects."""
        self.gone.set()


async def download(app: ASGIApp, token: str, asked: Asked, *, reads: float = math.inf) -> None:
    """GET /api/export as a client that reads the first `reads` body messages and then nothing."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/export",
        "raw_path": b"/api/export",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }
    requested = False
    left_to_read = reads

    async def receive() -> Message:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asked.gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal left_to_read
        if message["type"] == "http.response.start":
            asked.status = message["status"]
            asked.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            asked.answered.set()
        elif message["type"] == "http.response.body":
            if left_to_read <= 0:
                await anyio.sleep_forever()  # the client's socket is full: nothing more goes out
            left_to_read -= 1
            asked.body += message.get("body", b"")

    try:
        await app(scope, receive, send)
    except AnswerCut:
        asked.cut = True
    finally:
        asked.answered.set()
        asked.done.set()


@dataclass
class Viewed:
    app: ASGIApp
    exports: Exports
    engine: Engine
    group: TaskGroup

    async def held(self, token: str, *, reads: float = 0) -> Asked:
        """A download started and answered, whose client then reads no more than `reads` messages."""
        asked = Asked()
        self.group.start_soon(partial(download, self.app, token, asked, reads=reads))
        with anyio.fail_after(30):
            await asked.answered.wait()
        return asked

    async def whole(self, token: str) -> httpx2.Response:
        transport = httpx2.ASGITransport(self.app)
        async with httpx2.AsyncClient(
            base_url="http://127.0.0.1", transport=transport, headers={"authorization": f"Bearer {token}"}
        ) as client:
            return await client.get("/api/export")


@asynccontextmanager
async def viewing(db: str, limits: ExportLimits = PATIENT) -> AsyncIterator[Viewed]:
    exports = Exports(limits)

    async def namespace_of(token: str) -> str | None:
        return TOKENS.get(token)

    async with opened(db) as engine, anyio.create_task_group() as group:
        app = create_app(lambda: engine, namespace_of=namespace_of, exports=exports)
        yield Viewed(app, exports, engine, group)
        group.cancel_scope.cancel()


def memory(count: int = 60, chars: int = 3000) -> list:
    """Notes in each namespace, large enough that an export is many body messages."""
    return [
        notes(
            *(f"{namespace} note {n}: " + "words to export " * (chars // 16) for n in range(count)),
            namespace=namespace,
        )
        for namespace in TOKENS.values()
    ]


async def test_a_namespace_runs_two_exports_at_once_and_the_process_four(db_url):
    await write(db_url, *memory(count=5, chars=200))
    async with viewing(db_url) as viewed:
        alice = [await viewed.held(ALICE), await viewed.held(ALICE)]
        third = await viewed.whole(ALICE)
        bob = [await viewed.held(BOB), await viewed.held(BOB)]
        carol = await viewed.whole(CAROL)
        running = viewed.exports.running
        alice[0].leave()
        with anyio.fail_after(30):
            await alice[0].done.wait()
        carol_after = await viewed.whole(CAROL)
    assert [asked.status for asked in alice + bob] == [200] * 4
    assert (third.status_code, third.json()) == (429, {"error": BUSY})
    assert (carol.status_code, carol.json()) == (429, {"error": BUSY})
    assert running == 4
    assert carol_after.status_code == 200
    assert carol_after.text.splitlines()[-1].startswith('{"end":true')


async def test_a_download_read_through_is_the_command_lines_export(db_url):
    await write(db_url, *memory(count=20))
    async with viewing(db_url) as viewed:
        answer = await viewed.whole(ALICE)
        left = (viewed.exports.running, viewed.exports.spooled_bytes)
    # The command runs its own event loop, so on a thread of its own beside the test's.
    command = await anyio.to_thread.run_sync(lambda: run("export", "--db", db_url, "--namespace", "alice"))
    assert command.status == 0, command.stderr
    assert answer.status_code == 200
    assert answer.headers["content-length"] == str(len(answer.content))
    assert answer.content == command.stdout.encode()
    assert left == (0, 0)


async def test_a_download_that_reads_nothing_is_cut_and_its_spool_freed(db_url, report_figure):
    await write(db_url, *memory())
    stall_s = 0.5
    async with viewing(db_url, ExportLimits(stall_s=stall_s)) as viewed:
        nothing = await viewed.held(ALICE, reads=0)
        some = await viewed.held(ALICE, reads=2)
        spooled = viewed.exports.spooled_bytes
        began = time.monotonic()
        with anyio.fail_after(30):
            await nothing.done.wait()
            await some.done.wait()
        cut_after = time.monotonic() - began
        left = (viewed.exports.running, viewed.exports.spooled_bytes)
        again = await viewed.whole(ALICE)
    size = int(nothing.headers["content-length"])
    report_figure(
        f"view_export_stall: backend={backend_of(db_url)} export_bytes={size} spooled_while_held={spooled} "
        f"stall_s={stall_s} cut_after_s={cut_after:.2f} spooled_after={left[1]}"
    )
    assert nothing.cut and some.cut
    assert len(nothing.body) == 0 < len(some.body) < size
    assert spooled == 2 * size
    assert cut_after < stall_s * 20
    assert left == (0, 0)
    assert again.status_code == 200 and len(again.content) == size


async def test_a_client_that_leaves_frees_its_spool_at_once(db_url):
    await write(db_url, *memory(count=20))
    async with viewing(db_url) as viewed:
        asked = await viewed.held(ALICE, reads=1)
        asked.leave()
        with anyio.fail_after(30):
            await asked.done.wait()
        left = (viewed.exports.running, viewed.exports.spooled_bytes)
    assert not asked.cut
    assert left == (0, 0)


async def test_exports_never_spool_past_their_room(db_url, report_figure):
    await write(db_url, *memory(count=20))
    async with viewing(db_url) as viewed:
        size = len((await viewed.whole(ALICE)).content)
    # Room for two and a half exports: a namespace's share holds one and a quarter.
    roomy = ExportLimits(spool_bytes=size * 5 // 2, stall_s=600)
    async with viewing(db_url, roomy) as viewed:
        alice = await viewed.held(ALICE)
        alice_again = await viewed.whole(ALICE)
        bob = await viewed.held(BOB)
        carol = await viewed.whole(CAROL)
        peak = viewed.exports.spooled_bytes
        left_while_held = viewed.exports.running
    # A share smaller than one export: it can never be spooled.
    cramped = ExportLimits(spool_bytes=size, stall_s=600)
    async with viewing(db_url, cramped) as viewed:
        too_large = await viewed.whole(ALICE)
        left = (viewed.exports.running, viewed.exports.spooled_bytes)
    report_figure(
        f"view_export_room: backend={backend_of(db_url)} export_bytes={size} spool_bytes={roomy.spool_bytes} "
        f"peak_spooled={peak} refused_busy={(alice_again.status_code, carol.status_code)} "
        f"too_large={too_large.status_code}"
    )
    assert (alice.status, bob.status) == (200, 200)
    assert (alice_again.status_code, alice_again.json()) == (429, {"error": BUSY})
    assert (carol.status_code, carol.json()) == (429, {"error": BUSY})
    held = int(alice.headers["content-length"]) + int(bob.headers["content-length"])
    assert peak == held <= roomy.spool_bytes and left_while_held == 2
    assert too_large.status_code == 507
    assert "larger than" in too_large.json()["error"] and "memvm export" in too_large.json()["error"]
    assert left == (0, 0)


@contextmanager
def role_of_its_own(db_url: str) -> Iterator[tuple[str, str]]:
    """A login role that may use the test's database (superusers pass every connection limit, so
    the engine connects as this one); yields the role and the database URL for it."""
    import psycopg

    role = f"memvm_view_{abs(hash(db_url)) % 10**8}"
    grants = [
        f"CREATE ROLE {role} LOGIN",
        f"GRANT ALL ON SCHEMA public TO {role}",
        f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}",
    ]
    with psycopg.connect(db_url, autocommit=True) as admin:
        for statement in grants:
            admin.execute(statement)  # type: ignore[arg-type]
    try:
        yield role, db_url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)
    finally:
        with psycopg.connect(db_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")  # type: ignore[arg-type]
            admin.execute(f"DROP ROLE {role}")  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["postgresql"])
async def test_exports_read_through_the_engines_pool_and_open_no_connection_of_their_own(db_url):
    await write(db_url, *memory(count=20))
    with role_of_its_own(db_url) as (role, url):
        async with viewing(url) as viewed:
            warm = await viewed.whole(ALICE)
            [(held,)] = db_rows(db_url, "SELECT count(*) FROM pg_stat_activity WHERE usename = ?", (role,))
            # Not one connection more than the engine holds now.
            db_rows(db_url, f"ALTER ROLE {role} CONNECTION LIMIT {held}")
            answers = [await viewed.whole(name) for name in (ALICE, BOB, CAROL, ALICE, BOB)]
            [(after,)] = db_rows(db_url, "SELECT count(*) FROM pg_stat_activity WHERE usename = ?", (role,))
    assert warm.status_code == 200
    assert [answer.status_code for answer in answers] == [200] * 5
    assert all(answer.text.splitlines()[-1].startswith('{"end":true') for answer in answers)
    assert after <= held
