"""Build the MCP server: one MCPServer, its lifespan owning the engine, tools by profile."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from memvm.engine import Engine, EngineConfig
from memvm.engine.paging.tokens import warm_up
from memvm.resources.budget import with_reserve
from memvm.server import (
    mcp_prompts,
    mcp_resources,
    protocol_handlers,
    tools_guards,
    tools_host,
    tools_memory,
    tools_procedures,
)
from memvm.server.app_state import Runtime, RuntimeHolder
from memvm.server.errors import tool_error
from memvm.server.notify import delivered_from_elsewhere
from memvm.server.settings import ServerSettings, ToolProfile
from memvm.server.strict_arguments import check_arguments_strictly
from memvm.server.subscriptions import NamespacedBus
from memvm.server.tokens import NamespaceTokens
from memvm.server.tool_listing import compact_tool_listing
from memvm.server.working_set_fields import leave_out_working_set

INSTRUCTIONS = (
    "memvm is this assistant's long-term, paged memory. Use search_pages to find earlier conversation, "
    "notes and tool results; page_fault to read a page (abstract first: target_level 2); remember to keep "
    "a fact, preference or note for later."
)
# Where the host puts the working set in the prompt, pinned notes are in it; elsewhere they are
# what an empty search lists first.
IN_CONTEXT_INSTRUCTIONS = " The manifest and working-set resources show what is loaded."
PINNED_INSTRUCTIONS = (
    " Notes pinned with remember come first when search_pages lists what is remembered (an empty "
    "query): list them at the start of a conversation."
)


def instructions(profile: ToolProfile) -> str:
    """What a host passes on to the model at initialize, true for the hosts that serve `profile`."""
    return INSTRUCTIONS + (IN_CONTEXT_INSTRUCTIONS if profile.host_managed else PINNED_INSTRUCTIONS)


# How long after start the encoding is built if nothing needed it before: by then a host has
# connected and listed the tools, so the build competes with nothing.
ENCODING_WARM_UP_S = 1.0


class MemvmServer(MCPServer[Runtime]):
    """MCPServer whose tool failures read as one actionable sentence (see memvm.server.errors)."""

    # The process's runtime; `memvm serve` holds it open for the whole run (see RuntimeHolder).
    runtimes: RuntimeHolder

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Runtime, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if exc.__cause__ is None:  # raised as a ToolError on purpose: already a sentence
                raise
            raise tool_error(name, exc.__cause__) from exc.__cause__


def build_server(settings: ServerSettings, *, log_level: str = "WARNING") -> MemvmServer:
    # subscriptions/listen streams hear only their own namespace's changes.
    bus = NamespacedBus(lambda: holder.runtime.namespace)

    # A host that marks no turns starts none: the engine then says only what does start one.
    # The reserve is set here too, for settings built without `memvm serve` (tests, embedders).
    config = with_reserve(replace(settings.engine, turns_from_host=settings.tools.host_managed))

    async def open_runtime() -> Runtime:
        engine = await Engine.open(settings.db, config)
        # Built when first needed, or once the start-up's own work is done.
        warm_up(config.encoding, after_seconds=ENCODING_WARM_UP_S)
        # Pages written by this server, or by another process on the database, get their vectors.
        engine.start_embedding()
        runtime = Runtime(
            engine=engine,
            process_namespace=settings.namespace,
            default_session=settings.session,
            tokens_required=settings.tokens is not None,
            bus=bus,
            project=settings.project,
        )
        engine.db.on_change(lambda namespace, change: delivered_from_elsewhere(runtime, namespace, change))
        return runtime

    holder = RuntimeHolder(open_runtime)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Runtime]) -> AsyncIterator[Runtime]:
        async with holder.using() as runtime:
            yield runtime

    server = MemvmServer(
        "memvm",
        instructions=instructions(settings.tools),
        version=_version(),
        tools=_tools(settings.tools, config),
        lifespan=lifespan,
        log_level=log_level,  # type: ignore[arg-type]
        subscriptions=bus,
        **_bearer_auth(settings),
    )
    mcp_resources.register(server, holder)
    mcp_prompts.register(server, holder)
    protocol_handlers.register(server, holder)
    server.runtimes = holder
    return server


def _tools(profile: ToolProfile, config: EngineConfig) -> list[Tool]:
    """The tools `profile` serves, complete before the server takes them: what each returns and
    lists, strict arguments, compact schemas."""
    tools = [
        *tools_memory.tools(config, in_context=profile.host_managed),
        *tools_guards.tools(),
        *tools_procedures.tools(),
        *(tools_host.tools() if profile is ToolProfile.ALL else ()),
    ]
    if not profile.host_managed:
        leave_out_working_set(tools)
    check_arguments_strictly(tools)
    compact_tool_listing(tools)
    return tools


def _bearer_auth(settings: ServerSettings) -> dict[str, Any]:
    """The SDK's bearer-token middleware, checking tokens against the tokens file (HTTP only)."""
    if settings.tokens is None:
        return {}
    # No OAuth server is involved: the issuer URL is required by the settings type but unused,
    # and with no resource URL no authorization routes or resource metadata are served.
    return {
        "auth": AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None, required_scopes=[]),
        "token_verifier": NamespaceTokens(settings.tokens),
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memvm")
    except PackageNotFoundError:
        return "0"
