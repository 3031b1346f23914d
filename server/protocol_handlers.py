"""Protocol requests beyond tools and resources: subscribe, logging level, completion.

MCPServer serves none of these by default; they are registered on its low-level server (see
memvm.server.sdk_internals), which also makes the server advertise the matching capabilities.
"""

import logging
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from memvm.resources.rules import RuleMode
from memvm.server.app_state import Runtime
from memvm.server.sdk_internals import add_request_handler

MAX_COMPLETIONS = 100

# MCP's levels, mapped to Python's, for the `memvm` logger that goes to stderr.
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


async def subscribe(ctx: ServerRequestContext[Runtime, Any], params: SubscribeRequestParams) -> EmptyResult:
    runtime = ctx.lifespan_context
    runtime.subscriptions.add(runtime.namespace, str(params.uri), ctx.session)
    return EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Runtime, Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    runtime = ctx.lifespan_context
    runtime.subscriptions.remove(runtime.namespace, str(params.uri), ctx.session)
    return EmptyResult()


async def set_level(ctx: ServerRequestContext[Runtime, Any], params: SetLevelRequestParams) -> EmptyResult:
    # memvm logs to stderr only; the requested level sets how much it writes there.
    logging.getLogger("memvm").setLevel(_LEVELS.get(params.level, logging.WARNING))
    return EmptyResult()


async def complete(ctx: ServerRequestContext[Runtime, Any], params: CompleteRequestParams) -> CompleteResult:
    """Sessions and page ids of the caller's namespace, and the rule modes of `vm_rules`."""
    runtime = ctx.lifespan_context
    typed = params.argument.value
    values: list[str] = []
    if isinstance(params.ref, ResourceTemplateReference) and params.argument.name == "session":
        values = await runtime.engine.session_names(
            namespace=runtime.namespace, prefix=typed, limit=MAX_COMPLETIONS + 1
        )
    elif isinstance(params.ref, ResourceTemplateReference) and params.argument.name == "page_id":
        values = await runtime.engine.page_ids(
            namespace=runtime.namespace, prefix=typed, limit=MAX_COMPLETIONS + 1
        )
    elif isinstance(params.ref, PromptReference) and params.argument.name == "mode":
        values = [mode.value for mode in RuleMode if mode.value.startswith(typed)]
    return CompleteResult(
        completion=Completion(values=values[:MAX_COMPLETIONS], has_more=len(values) > MAX_COMPLETIONS)
    )


def register(server: MCPServer[Runtime]) -> None:
    add_request_handler(server, "resources/subscribe", SubscribeRequestParams, subscribe)
    add_request_handler(server, "resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    add_request_handler(server, "logging/setLevel", SetLevelRequestParams, set_level)
    add_request_handler(server, "completion/complete", CompleteRequestParams, complete)
