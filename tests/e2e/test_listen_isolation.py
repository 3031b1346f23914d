"""subscriptions/listen over real HTTP with two tokens: a stream hears only its own namespace.

Both tenants listen to the same URIs (`memvm://current/...` is the same string for everyone) and
to a session of the other's. Each then changes its own memory; every event a stream receives
must come from its own tenant's changes.
"""

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent
from memvm.server.subscriptions import MAX_PER_CONNECTION

from tests.e2e.test_http import ALICE, BOB, START_LIMIT, call, client, http_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE_SESSION, BOB_SESSION = "alice-trip", "bob-only"
SHARED = ["memvm://current/manifest", "memvm://current/working-set"]
FOLLOWED = [
    *SHARED,
    *(
        f"memvm://sessions/{s}/{view}"
        for s in (ALICE_SESSION, BOB_SESSION)
        for view in ("manifest", "working-set")
    ),
]


async def events_until(stream, last_uri: str) -> list[str]:
    """The URIs a stream delivers, up to and including `last_uri`."""
    uris: list[str] = []
    with anyio.fail_after(START_LIMIT):
        while not uris or uris[-1] != last_uri:
            event: ServerEvent = await stream.__anext__()
            assert isinstance(event, ResourceUpdated)
            uris.append(event.uri)
    return uris


async def pin(connected: Client, content: str, session: str) -> None:
    error, _, text = await call(connected, "remember", content=content, pin=True, session=session)
    assert not error, text


def own(uri: str, session: str) -> bool:
    return uri in SHARED or f"/sessions/{session}/" in uri


async def test_a_listen_stream_hears_only_its_own_tokens_changes(db_url, tokens, report_figure):
    with http_server(db_url, tokens) as url, anyio.fail_after(START_LIMIT * 3):
        async with (
            client(url, ALICE) as alice,
            client(url, BOB) as bob,
            alice.listen(resource_subscriptions=FOLLOWED) as alice_stream,
            bob.listen(resource_subscriptions=FOLLOWED) as bob_stream,
        ):
            # Alice changes her default session and her named one; Bob then changes only his.
            await pin(alice, "Alice's ferry leaves at dawn.", "default")
            await pin(alice, "Alice's vault code is 4417.", ALICE_SESSION)
            alice_first = await events_until(alice_stream, f"memvm://sessions/{ALICE_SESSION}/manifest")
            await pin(bob, "Bob's note.", BOB_SESSION)
            bob_heard = await events_until(bob_stream, f"memvm://sessions/{BOB_SESSION}/manifest")
            # One more change of Alice's, to read past anything of Bob's her stream might hold.
            await pin(alice, "Alice's second note.", "default")
            alice_then = await events_until(alice_stream, "memvm://current/manifest")
            honored = set(alice_stream.honored.resource_subscriptions or [])
    alice_heard = alice_first + alice_then
    foreign = [u for u in bob_heard if not u.startswith(f"memvm://sessions/{BOB_SESSION}/")]
    foreign += [u for u in alice_heard if not own(u, ALICE_SESSION) or BOB_SESSION in u]
    assert honored == set(FOLLOWED)
    assert "memvm://current/working-set" in alice_heard
    assert f"memvm://sessions/{BOB_SESSION}/working-set" in bob_heard
    assert foreign == []
    report_figure(
        f"listen_isolation: events_own={len(alice_heard) + len(bob_heard)} events_foreign={len(foreign)}"
    )


async def test_a_listen_stream_follows_only_resources_memvm_announces_and_few_of_them(db_url, tokens):
    with http_server(db_url, tokens) as url, anyio.fail_after(START_LIMIT * 2):
        async with client(url, ALICE) as alice:
            async with alice.listen(
                resource_subscriptions=["memvm://current/manifest", "memvm://pages/x", "x" * 100_000]
            ) as stream:
                honored = stream.honored.resource_subscriptions
            with pytest.raises(MCPError) as too_many:
                async with alice.listen(
                    resource_subscriptions=[f"memvm://sessions/s{n}/manifest" for n in range(100)]
                ):
                    pass
    assert honored == ["memvm://current/manifest"]
    assert f"at most {MAX_PER_CONNECTION} resources" in too_many.value.message
