"""The model-facing memory tools: page_fault, search_pages, remember."""

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from memvm.engine.models import (
    FaultResult,
    Level,
    NewPage,
    PageType,
    RememberResult,
    SearchResult,
    SearchScope,
)
from memvm.server.app_state import Runtime, ToolContext
from memvm.server.arguments import (
    Content,
    Key,
    ModalityFilter,
    PageId,
    PageTypeFilter,
    Query,
    Scope,
    SessionName,
    Summary,
)
from memvm.server.notify import manifest_changed, working_set_changed
from pydantic import Field

RememberType = Literal["note", "claim", "preference", "summary", "procedure"]


async def page_fault(
    page_id: PageId,
    ctx: ToolContext,
    target_level: Annotated[
        int,
        Field(ge=0, le=3, description="0 full, 1 reduced, 2 abstract (default), 3 reference."),
    ] = 2,
    session: SessionName = None,
) -> FaultResult:
    """Load a stored page into your context at a level of detail, and return its content.

    Call it when search_pages, the manifest or the context names a page you need to read before
    answering. Start with target_level 2 (a short abstract); ask for 1 or 0 only when you need more
    detail. A page already loaded at that level or finer is free to read again. `mapped` says
    whether it now sits in your context; if false, `reason` says why.
    """
    runtime = ctx.request_context.lifespan_context
    result = await runtime.engine.page_fault(
        namespace=runtime.namespace,
        session=runtime.session(session),
        page_id=page_id,
        target_level=Level(target_level),
        host_session=runtime.default_session,
    )
    if not result.already_mapped:
        await working_set_changed(ctx, runtime.session(session))
    return result


async def search_pages(
    query: Query,
    ctx: ToolContext,
    limit: Annotated[int, Field(ge=1, le=50, description="How many results, 1 to 50.")] = 5,
    modality: ModalityFilter = None,
    type: PageTypeFilter = None,
    scope: Scope = SearchScope.ALL,
    session: SessionName = None,
) -> SearchResult:
    """Find stored pages (earlier conversation, notes, facts, tool results) by words they contain.

    Returns the best matches first, each with its page id, a snippet, token counts per level and
    whether it is already loaded. Pass an exact page id to look that page up. Then call page_fault
    on the pages you need.
    """
    runtime = ctx.request_context.lifespan_context
    return await runtime.engine.search(
        namespace=runtime.namespace,
        session=runtime.session(session),
        query=query,
        limit=limit,
        page_type=type,
        modality=modality,
        scope=scope,
    )


async def remember(
    content: Content,
    ctx: ToolContext,
    type: RememberType = "note",
    key: Key | None = None,
    summary: Summary = None,
    importance: Annotated[
        float, Field(ge=0.0, le=1.0, description="0 to 1; higher stays in context longer.")
    ] = 0.5,
    pin: Annotated[bool, Field(description="Keep it in your context at all times.")] = False,
    session: SessionName = None,
) -> RememberResult:
    """Store a fact, preference, note, summary or procedure for later turns and conversations.

    Give a `key` to keep one current version of something (the same key updates the page). Returns
    the page id, whether a new page was created, and its token count at each level.
    """
    runtime = ctx.request_context.lifespan_context
    result = await runtime.engine.remember(
        namespace=runtime.namespace,
        session=runtime.session(session),
        page=NewPage(
            content=content,
            type=PageType(type),
            summary=summary,
            importance=importance,
            pinned=pin,
            provenance="model",
        ),
        key=key,
    )
    if pin or not result.created:
        await working_set_changed(ctx, runtime.session(session))
    else:
        await manifest_changed(ctx, runtime.session(session))
    return result


def register(server: MCPServer[Runtime]) -> None:
    server.add_tool(
        page_fault,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    server.add_tool(
        search_pages,
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    server.add_tool(
        remember,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
        ),
    )
