"""Subscriptions, completion and logging level through the official client (handshake era, and
completion in both)."""

import logging
import warnings
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    EmptyResult,
    JSONRPCError,
    JSONRPCRequest,
    PromptReference,
    Request,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
)
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings, ToolProfile
from memvm.server.subscriptions import MAX_PER_CONNECTION
from pydantic import BaseModel

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture
def server(db_path):
    return build_server(ServerSettings(db=str(db_path), tools=ToolProfile.ALL))


async def updates_after(client: Client, received: list, action) -> list[str]:
    received.clear()
    await action()
    # A notification is sent before the tool's reply; one more round trip flushes any stragglers.
    await client.call_tool("search_pages", {"query": "flush"})
    return [message.params.uri for message in received if isinstance(message, ResourceUpdatedNotification)]


async def test_a_subscriber_hears_when_the_working_set_changes_and_not_after_unsubscribing(server):
    received: list = []

    async def collect(message) -> None:
        received.append(message)

    async with Client(server, mode="legacy", message_handler=collect) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource("memvm://current/working-set")
            pinned = await updates_after(
                client, received, lambda: client.call_tool("remember", {"content": "Keep this.", "pin": True})
            )
            searched = await updates_after(
                client, received, lambda: client.call_tool("search_pages", {"query": "keep"})
            )
            await client.unsubscribe_resource("memvm://current/working-set")
            after = await updates_after(
                client, received, lambda: client.call_tool("remember", {"content": "And this.", "pin": True})
            )
    assert pinned == ["memvm://current/working-set"]
    assert searched == [] and after == []


async def test_session_page_id_and_mode_arguments_complete_from_what_exists(server):
    async with Client(server, mode="legacy") as client:
        await client.call_tool("remember", {"content": "a", "key": "plan-a"})
        await client.call_tool("remember", {"content": "b", "key": "plan-b"})
        await client.call_tool("remember", {"content": "c", "key": "other", "session": "planning"})
        pages = await client.complete(
            ResourceTemplateReference(uri="memvm://pages/{page_id}"), {"name": "page_id", "value": "plan"}
        )
        sessions = await client.complete(
            ResourceTemplateReference(uri="memvm://sessions/{session}/manifest"),
            {"name": "session", "value": "pl"},
        )
        modes = await client.complete(PromptReference(name="vm_rules"), {"name": "mode", "value": "p"})
        percent = await client.complete(
            ResourceTemplateReference(uri="memvm://pages/{page_id}"), {"name": "page_id", "value": "%"}
        )
    assert pages.completion.values == ["plan-a", "plan-b"]
    assert sessions.completion.values == ["planning"]
    assert modes.completion.values == ["passive"]
    assert percent.completion.values == []


async def test_rule_modes_complete_in_both_protocol_eras(server, mode):
    async with Client(server, mode=mode) as client:
        modes = await client.complete(PromptReference(name="vm_rules"), {"name": "mode", "value": "r"})
    assert modes.completion.values == ["relaxed"]


async def test_the_server_advertises_subscribe_completion_and_logging_and_serves_them(server):
    async with Client(server, mode="legacy") as client:
        capabilities = client.server_capabilities
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both methods are gone from the new protocol era
            await client.subscribe_resource("memvm://current/working-set")
            await client.set_logging_level("info")
    assert capabilities is not None and capabilities.resources is not None
    assert capabilities.resources.subscribe is True
    assert capabilities.completions is not None and capabilities.logging is not None


async def test_a_malformed_subscribe_is_refused_as_invalid_params_and_the_connection_goes_on(server):
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.session.send_request(
                RawRequest(method="resources/subscribe", params={"uri": 42}), EmptyResult
            )
        pages = await client.call_tool("search_pages", {"query": "anything"})
    assert refused.value.error.code == INVALID_PARAMS
    assert not pages.is_error


class RawMessage(BaseModel):
    """A notification sent as written: the SDK's own keeps no parameters it does not know."""

    method: str
    params: dict[str, Any]


class RawRequest(Request):
    """A request sent as written, whatever its parameters."""

    params: dict[str, Any] | None = None


async def test_before_initialize_subscribe_is_refused_as_any_method_the_server_serves(server):
    # Over stdio or SSE a client can send anything first; nothing is kept for it.
    async with InMemoryTransport(server) as (read, write):
        for method in ("resources/subscribe", "tools/list"):
            params = {"uri": "memvm://current/working-set"} if method == "resources/subscribe" else {}
            await write.send(
                SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=method, method=method, params=params))
            )
        with anyio.fail_after(30):
            replies = {(reply := (await read.receive()).message).id: reply for _ in range(2)}
    subscribe, listing = replies["resources/subscribe"], replies["tools/list"]
    assert isinstance(subscribe, JSONRPCError) and isinstance(listing, JSONRPCError)
    assert (subscribe.error.code, subscribe.error.message) == (listing.error.code, listing.error.message)


async def test_a_subscribe_sent_as_a_notification_subscribes_nothing(server):
    received: list = []

    async def collect(message) -> None:
        received.append(message)

    async with Client(server, mode="legacy", message_handler=collect) as client:
        await client.session.send_notification(
            RawMessage(method="resources/subscribe", params={"uri": "memvm://current/working-set"})
        )
        heard = await updates_after(
            client, received, lambda: client.call_tool("remember", {"content": "Keep this.", "pin": True})
        )
    assert heard == []


async def test_listen_in_the_handshake_era_is_not_found_whatever_it_asks(server):
    async with Client(server, mode="legacy") as client:
        codes = []
        for uris in (["memvm://current/manifest"], [f"memvm://sessions/s{n}/manifest" for n in range(40)]):
            with pytest.raises(MCPError) as refused:
                await client.session.send_request(
                    RawRequest(
                        method="subscriptions/listen",
                        params={"notifications": {"resourceSubscriptions": uris}},
                    ),
                    EmptyResult,
                )
            codes.append(refused.value.error.code)
    assert codes == [METHOD_NOT_FOUND, METHOD_NOT_FOUND]


async def test_a_listen_stream_follows_only_resources_memvm_announces_and_few_of_them(server):
    async with Client(server) as client:
        wanted = ["memvm://current/manifest", "memvm://pages/x", "memvm://current/manifest", "x" * 10_000]
        async with client.listen(resource_subscriptions=wanted) as stream:
            honored = stream.honored.resource_subscriptions
        with pytest.raises(MCPError) as too_many:
            async with client.listen(
                resource_subscriptions=[
                    f"memvm://sessions/s{n}/manifest" for n in range(MAX_PER_CONNECTION + 1)
                ]
            ):
                pass
    assert honored == ["memvm://current/manifest"]
    assert f"at most {MAX_PER_CONNECTION} resources" in too_many.value.message


async def test_manifest_subscribers_hear_when_what_it_shows_changes(server):
    received: list = []

    async def collect(message) -> None:
        received.append(message)

    current, other = "memvm://current/manifest", "memvm://sessions/planning/manifest"
    async with Client(server, mode="legacy", message_handler=collect) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(current)
            await client.subscribe_resource(other)
            stored = await updates_after(
                client, received, lambda: client.call_tool("remember", {"content": "The gate code is 4411."})
            )
            page_id = (await client.call_tool("search_pages", {"query": "gate"})).structured_content[
                "results"
            ][0]["page_id"]
            faulted = await updates_after(
                client, received, lambda: client.call_tool("page_fault", {"page_id": page_id})
            )
            turned = await updates_after(client, received, lambda: client.call_tool("begin_turn", {}))
            searched = await updates_after(
                client, received, lambda: client.call_tool("search_pages", {"query": "gate"})
            )
            await client.unsubscribe_resource(current)
            after = await updates_after(
                client, received, lambda: client.call_tool("remember", {"content": "Another note."})
            )
    # A new page is listed by every manifest of the namespace; the fault and the turn change this one.
    assert sorted(stored) == [current, other]
    assert current in faulted and current in turned
    assert searched == [] and after == [other]


@pytest.mark.parametrize("level", ["debug", "emergency"])
async def test_a_client_setting_the_log_level_leaves_the_servers_log_as_the_operator_set_it(server, level):
    loggers = [logging.getLogger(), logging.getLogger("memvm"), logging.getLogger("memvm.storage")]
    before = [(each.level, each.getEffectiveLevel()) for each in loggers]
    try:
        async with Client(server, mode="legacy") as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.set_logging_level(level)
            after = [(each.level, each.getEffectiveLevel()) for each in loggers]
    finally:
        for each, (own, _) in zip(loggers, before, strict=True):
            each.setLevel(own)
    assert after == before
