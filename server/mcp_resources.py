"""Resources: read-only views of the engine, rendered by memvm.resources."""

import json
import re
from collections.abc import Awaitable, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from memvm.engine.errors import MemvmError
from memvm.engine.names import NAME_PATTERN, is_name
from memvm.resources.context import render_context, render_developer_message
from memvm.resources.manifest import render_manifest
from memvm.resources.rules import RuleMode
from memvm.server.app_state import Runtime, RuntimeHolder, ToolContext
from memvm.server.errors import resource_error

JSON = "application/json"
TEXT = "text/plain"

# The views whose changes memvm announces (see memvm.server.notify), for the current session or a
# named one: the only resources a subscription to can ever fire.
_SESSION = NAME_PATTERN.removeprefix("^").removesuffix("$")
_FOLLOWABLE = re.compile(rf"memvm://(?:current|sessions/{_SESSION})/(?:manifest|working-set)")
# Longer than any URI the pattern admits; checked first, so a huge URI costs no matching.
_MAX_URI_CHARS = 256
FOLLOWABLE = (
    "memvm://current/manifest, memvm://current/working-set, "
    "memvm://sessions/{session}/manifest and memvm://sessions/{session}/working-set"
)


def followable(uri: str) -> bool:
    """Whether memvm ever announces a change to `uri`."""
    return len(uri) <= _MAX_URI_CHARS and _FOLLOWABLE.fullmatch(uri) is not None


async def _manifest(runtime: Runtime, session: str) -> str:
    return await render_manifest(runtime.scope(session))


async def _working_set(runtime: Runtime, session: str) -> str:
    view = await runtime.scope(session).working_set()
    return render_context(view)


async def _context(runtime: Runtime, session: str) -> str:
    message = await render_developer_message(runtime.scope(session), mode=RuleMode.STRICT)
    return message.text


async def _page(runtime: Runtime, page_id: str) -> str:
    page = await runtime.namespace_scope().get_page(page_id=page_id)
    return json.dumps(
        {
            "page_id": page.page_id,
            "session": page.session,
            "type": page.type.value,
            "role": page.role.value if page.role else None,
            "modality": page.modality.value,
            "provenance": page.provenance,
            "importance": page.importance,
            "pinned": page.pinned,
            "created_at": page.created_at,
            "turn": page.turn,
            "metadata": page.metadata,
            "levels": {str(level): text for level, text in enumerate(page.levels)},
            "tokens": page.tokens.as_dict(),
            "expires_at": page.expires_at,
            # Superseded versions: what the page said before, oldest first; never current.
            "version": page.version,
            "versions": [version.model_dump(mode="json") for version in page.versions],
        },
        ensure_ascii=False,
    )


async def _guarded(read: Callable[[], Awaitable[str]]) -> str:
    try:
        return await read()
    except MemvmError as exc:
        raise resource_error(exc) from exc


def _checked_session(session: str) -> str:
    if not is_name(session):
        raise ResourceNotFoundError(
            f"No session '{session[:64]}'; session names use letters, digits and _ . : -."
        )
    return session


def register(server: MCPServer[Runtime], holder: RuntimeHolder) -> None:
    views: dict[str, tuple[str, Callable[[Runtime, str], Awaitable[str]], str]] = {
        "manifest": (
            JSON,
            _manifest,
            "Map of this session's memory: what is loaded, what can be faulted, policies.",
        ),
        "working-set": (TEXT, _working_set, "The pages loaded into context now, packed as <VM:CONTEXT>."),
        "context": (
            TEXT,
            _context,
            "The developer message: rules, manifest and packed context (strict mode).",
        ),
    }
    for name, (mime, render, description) in views.items():
        _register_current(server, holder, name, mime, render, description)
        _register_session_template(server, name, mime, render, description)

    @server.resource(
        "memvm://pages/{page_id}",
        name="page",
        mime_type=JSON,
        description="One stored page at every level, with its metadata. Reading it does not load it.",
    )
    async def page_resource(page_id: str, ctx: ToolContext) -> str:
        return await _guarded(lambda: _page(ctx.request_context.lifespan_context, page_id))


def _register_current(
    server: MCPServer[Runtime],
    holder: RuntimeHolder,
    name: str,
    mime: str,
    render: Callable[[Runtime, str], Awaitable[str]],
    description: str,
) -> None:
    async def read() -> str:
        runtime = holder.runtime
        return await _guarded(lambda: render(runtime, runtime.default_session))

    server.resource(
        f"memvm://current/{name}", name=f"current-{name}", mime_type=mime, description=description
    )(read)


def _register_session_template(
    server: MCPServer[Runtime],
    name: str,
    mime: str,
    render: Callable[[Runtime, str], Awaitable[str]],
    description: str,
) -> None:
    async def read(session: str, ctx: ToolContext) -> str:
        runtime = ctx.request_context.lifespan_context
        return await _guarded(lambda: render(runtime, _checked_session(session)))

    server.resource(
        f"memvm://sessions/{{session}}/{name}",
        name=f"session-{name}",
        mime_type=mime,
        description=description,
    )(read)
