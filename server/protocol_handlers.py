"""Protocol requests beyond tools and resources: subscribe, listen, logging level, completion.

MCPServer serves completion through its `completion()` decorator, subscriptions/listen (on the
bus it was given) without bounds, and resources/subscribe, resources/unsubscribe and
logging/setLevel not at all. `ProtocolMethods`, a server middleware, answers those three in the
handshake era (the new era has dropped them), says so in the handshake's capabilities, and bounds
what a listen stream asks for before the SDK's own handler opens it.
"""

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
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
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from memvm.resources.rules import RuleMode
from memvm.server.app_state import Runtime, RuntimeHolder
from memvm.server.mcp_resources import FOLLOWABLE, followable
from memvm.server.subscriptions import MAX_PER_CONNECTION, SubscriptionRefused
from pydantic import BaseModel

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


def bounded_listen(params: SubscriptionsListenRequestParams) -> SubscriptionsListenRequestParams:
    """What a listen stream asks for, following only resources memvm announces, and few of them.

    URIs that never fire are left out of the stream's filter rather than refused: the stream's
    acknowledgement lists what it follows, as the protocol has it.
    """
    wanted = params.notifications.resource_subscriptions or []
    if len(wanted) > MAX_PER_CONNECTION:
        raise MCPError(
            INVALID_PARAMS,
            f"A listen stream follows at most {MAX_PER_CONNECTION} resources; ask for fewer.",
        )
    kept = list(dict.fromkeys(uri for uri in wanted if followable(uri)))
    notifications = params.notifications.model_copy(update={"resource_subscriptions": kept or None})
    return params.model_copy(update={"notifications": notifications})


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


Handler = Callable[[ServerRequestContext[Runtime, Any], Any], Awaitable[EmptyResult]]

# Answered here in the handshake era, each with the type its parameters are read as.
_ANSWERED: dict[str, tuple[type[BaseModel], Handler]] = {
    "resources/subscribe": (SubscribeRequestParams, subscribe),
    "resources/unsubscribe": (UnsubscribeRequestParams, unsubscribe),
    "logging/setLevel": (SetLevelRequestParams, set_level),
}


class ProtocolMethods:
    """Server middleware for the protocol methods MCPServer leaves out or leaves unbounded."""

    async def __call__(self, ctx: ServerRequestContext[Runtime, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: the SDK drops what it does not know
            return await call_next(ctx)
        handshake_era = ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        if ctx.method == "initialize":
            return _advertised(await call_next(ctx))
        if handshake_era and ctx.method in _ANSWERED:
            if ctx.session.client_params is None:
                # Before initialize, as the SDK answers a method it serves.
                raise MCPError(INVALID_PARAMS, "Invalid request parameters")
            params_type, handler = _ANSWERED[ctx.method]
            # A malformed request raises ValidationError, which the SDK answers as invalid params.
            return await handler(ctx, params_type.model_validate(ctx.params or {}, by_name=False))
        if not handshake_era and ctx.method == "subscriptions/listen":
            params = SubscriptionsListenRequestParams.model_validate(ctx.params or {}, by_name=False)
            bounded = bounded_listen(params).model_dump(by_alias=True, mode="json", exclude_none=True)
            return await call_next(replace(ctx, params=bounded))
        return await call_next(ctx)


def _advertised(result: HandlerResult) -> HandlerResult:
    """The handshake's answer, saying the server takes subscriptions and a log level."""
    if isinstance(result, dict) and isinstance(capabilities := result.get("capabilities"), dict):
        if isinstance(resources := capabilities.get("resources"), dict):
            resources["subscribe"] = True
        capabilities["logging"] = {}
    return result


def register(server: MCPServer[Runtime], holder: RuntimeHolder) -> None:
    server.middleware.append(ProtocolMethods())

    # The SDK hands a completion handler no request context: the runtime is the process's one.
    async def completion(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        return await complete(holder.runtime, ref, argument)

    server.completion()(completion)  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
