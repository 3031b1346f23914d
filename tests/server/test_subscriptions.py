"""resources/subscribe within bounds: URIs memvm announces, a few per connection, freed with it."""

import warnings

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST
from memvm.server import subscriptions as subscriptions_module
from memvm.server.app import build_server
from memvm.server.app_state import ToolContext
from memvm.server.settings import ServerSettings, ToolProfile
from memvm.server.subscriptions import MAX_PER_CONNECTION, Subscriptions

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ATTEMPTS = 200


def server_showing_subscriptions(db_path, held: list[Subscriptions]):
    """The real server, plus one tool that hands the test the Subscriptions its runtime holds."""
    server = build_server(ServerSettings(db=str(db_path), tools=ToolProfile.ALL))

    @server.tool()
    async def show_subscriptions(ctx: ToolContext) -> str:
        held.append(ctx.request_context.lifespan_context.subscriptions)
        return "shown"

    return server


async def refusal(client: Client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as refused:
        await client.subscribe_resource(uri)
    return refused.value


async def test_huge_and_too_many_subscriptions_are_refused_and_the_rest_freed_with_the_connection(
    db_path, report_figure
):
    held: list[Subscriptions] = []
    kept = refused = 0
    messages: set[str] = set()
    async with Client(server_showing_subscriptions(db_path, held), mode="legacy") as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.call_tool("show_subscriptions", {})
            (subscriptions,) = held
            huge = await refusal(client, "memvm://current/manifest" + "x" * 4_000_000)
            # Accepted, as the protocol has it, but never announced, so nothing is kept for them.
            await client.subscribe_resource("memvm://pages/some-page")
            await client.subscribe_resource("test://watched-resource")
            unannounced = len(subscriptions)
            for n in range(ATTEMPTS):
                try:
                    await client.subscribe_resource(f"memvm://sessions/s{n}/manifest")
                    kept += 1
                except MCPError as exc:
                    refused += 1
                    messages.add(f"{exc.code} {exc.message}")
            # Unsubscribing from what was never followed keeps nothing either.
            for n in range(ATTEMPTS):
                await client.unsubscribe_resource(f"memvm://sessions/never{n}/working-set")
            during = len(subscriptions)
    freed = len(subscriptions) == 0
    assert huge.code == INVALID_PARAMS and len(huge.message) < 300
    assert "at most 2048 characters" in huge.message and "memvm://current/working-set" in huge.message
    assert unannounced == 0
    assert kept == during == MAX_PER_CONNECTION and refused == ATTEMPTS - kept
    assert messages == {
        f"{INVALID_REQUEST} This connection already follows {MAX_PER_CONNECTION} resources; "
        "unsubscribe from one before subscribing to another."
    }
    assert freed
    report_figure(f"subscriptions: attempts={ATTEMPTS} kept={kept} refused={refused} freed={freed}")


async def test_unsubscribing_makes_room_and_a_full_namespace_refuses_in_words(db_path, monkeypatch):
    monkeypatch.setattr(subscriptions_module, "MAX_PER_NAMESPACE", 2)
    held: list[Subscriptions] = []
    async with Client(server_showing_subscriptions(db_path, held), mode="legacy") as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.call_tool("show_subscriptions", {})
            await client.subscribe_resource("memvm://current/manifest")
            await client.subscribe_resource("memvm://current/working-set")
            # The same URI again is the same subscription, not another.
            await client.subscribe_resource("memvm://current/manifest")
            full = await refusal(client, "memvm://sessions/planning/manifest")
            await client.unsubscribe_resource("memvm://current/manifest")
            await client.subscribe_resource("memvm://sessions/planning/manifest")
            during = len(held[0])
    assert full.code == INVALID_REQUEST and "already has 2 subscriptions open" in full.message
    assert during == 2 and len(held[0]) == 0
