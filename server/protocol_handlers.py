"""Protocol requests beyond tools and resources: subscribe, listen, logging level, completion.

MCPServer serves completion only through its `completion()` decorator, and subscribe, logging
level not at all and subscriptions/listen without bounds; those three are registered on its
low-level server (see memvm.server.sdk_internals), which also makes the server advertise the
matching capabilities.
"""

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
)
from memvm.resources.rules import RuleMode
from memvm.server.app_state import Runtime, RuntimeHolder
from memvm.server.mcp_resources import FOLLOWABLE, followable
from memvm.server.sdk_internals import add_request_handler
from memvm.server.subscriptions import MAX_PER_CONNECTION, NamespacedBus, SubscriptionRefused

MAX_COMPLETIONS = 100

# Longer than any URI worth naming; memvm's own are far shorter.
MAX_URI_CHARS = 2048
_TOO_LONG = (
    f"A resource URI is at most {MAX_URI_CHARS} characters; memvm announces changes only to {FOLLOWABLE}."
)


async def subscribe(ctx: ServerRequestContext[Runtime, Any], params: SubscribeRequestParams) -> EmptyResult:
    runtime = ctx.lifespan_context
    uri = str(params.uri)
    if len(uri) > MAX_URI_CHARS:
        raise MCPError(INVALID_PARAMS, _TOO_LONG)
    # Any other URI is accepted, as the protocol has it, and kept nowhere: no change to it is
    # ever announced, and a URI kept for nothing is memory a client could grow at will.
    if not followable(uri):
        return EmptyResult()
    try:
        runtime.subscriptions.add(runtime.namespace, uri, ctx.session)
    except SubscriptionRefused as exc:
        raise MCPError(INVALID_REQUEST, str(exc)) from None
    return EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Runtime, Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    runtime = ctx.lifespan_context
    runtime.subscriptions.remove(runtime.namespace, str(params.uri), ctx.session)
    return EmptyResult()


Listen = Callable[
    [ServerRequestContext[Runtime, Any], SubscriptionsListenRequestParams], Awaitable[HandlerResult]
]


def bounded_listen(sdk_listen: Listen) -> Listen:
    """The SDK's listen handler, following only resources memvm announces, and few of them.

    URIs that never fire are left out of the stream's filter rather than refused: the stream's
    acknowledgement lists what it follows, as the protocol has it.
    """

    async def listen(
        ctx: ServerRequestContext[Runtime, Any], params: SubscriptionsListenRequestParams
    ) -> HandlerResult:
        wanted = params.notifications.resource_subscriptions or []
        if len(wanted) > MAX_PER_CONNECTION:
            raise MCPError(
                INVALID_PARAMS,
                f"A listen stream follows at most {MAX_PER_CONNECTION} resources; ask for fewer.",
            )
        kept = list(dict.fromkeys(uri for uri in wanted if followable(uri)))
        notifications = params.notifications.model_copy(update={"resource_subscriptions": kept or None})
        return await sdk_listen(ctx, params.model_copy(update={"notifications": notifications}))

    return listen


async def set_level(ctx: ServerRequestContext[Runtime, Any], params: SetLevelRequestParams) -> EmptyResult:
    # The level is for log messages sent to this client, and memvm sends none. Its stderr log is
    # the operator's (`memvm serve --log-level`): one client must not quiet it, or flood it, for all.
    return EmptyResult()


async def complete(
    runtime: Runtime, ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument
) -> Completion:
    """Sessions and page ids of the caller's namespace, and the rule modes of `vm_rules`."""
    typed = argument.value
    values: list[str] = []
    if isinstance(ref, ResourceTemplateReference) and argument.name == "session":
        values = await runtime.namespace_scope().session_names(prefix=typed, limit=MAX_COMPLETIONS + 1)
    elif isinstance(ref, ResourceTemplateReference) and argument.name == "page_id":
        values = await runtime.namespace_scope().page_ids(prefix=typed, limit=MAX_COMPLETIONS + 1)
    elif isinstance(ref, PromptReference) and argument.name == "mode":
        values = [mode.value for mode in RuleMode if mode.value.startswith(typed)]
    return Completion(values=values[:MAX_COMPLETIONS], has_more=len(values) > MAX_COMPLETIONS)


def register(server: MCPServer[Runtime], holder: RuntimeHolder, bus: NamespacedBus) -> None:
    add_request_handler(server, "resources/subscribe", SubscribeRequestParams, subscribe)
    add_request_handler(server, "resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    # In place of the SDK's own handler on the same bus, which MCPServer registered.
    listen = bounded_listen(ListenHandler(bus))
    add_request_handler(server, "subscriptions/listen", SubscriptionsListenRequestParams, listen)
    add_request_handler(server, "logging/setLevel", SetLevelRequestParams, set_level)

    # The SDK hands a completion handler no request context: the runtime is the process's one.
    async def completion(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        return await complete(holder.runtime, ref, argument)

    server.completion()(completion)  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
