"""The model-facing memory tools: page_fault, search_pages, remember."""

from typing import Annotated, Any, Literal

from mcp.server.mcpserver.tools import Tool
from memvm.engine import EngineConfig
from memvm.engine.errors import fault_limit_resets
from memvm.engine.models.pages import Level, NewPage, PageType
from memvm.engine.models.recall import SearchResult, SearchScope
from memvm.engine.models.working_set import FaultResult
from memvm.engine.models.writes import ForgetResult, RememberResult
from memvm.engine.paging.memory import MAX_TTL_SECONDS
from memvm.server.app_state import ToolContext
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
from memvm.server.tool_listing import DELETES, READS, WRITES, WRITES_ONCE, docstring
from pydantic import Field

RememberType = Annotated[
    Literal["note", "claim", "preference", "summary", "procedure"],
    Field(
        description="note: anything worth keeping; claim: a fact to hold as true; preference: how the "
        "user wants things; summary: your digest of earlier conversation; procedure: steps that "
        "worked."
    ),
]

RememberScope = Annotated[
    Literal["project", "user"],
    Field(description="user: a fact about the user (name, family, tastes), recalled in every project."),
]


async def page_fault(
    page_id: PageId,
    ctx: ToolContext,
    target_level: Annotated[
        int,
        Field(ge=0, le=3, description="0 full, 1 reduced, 2 abstract, 3 reference."),
    ] = 2,
    session: SessionName = None,
) -> FaultResult:
    """Read a stored page at a level of detail: its content comes back in this reply.

    Call it when search_pages or the conversation names a page you need before answering. Start at
    target_level 2 (abstract); go to 1 or 0 only for more detail. Reads are limited to
    {max_faults_per_turn} per turn: past that the call fails, so answer with what you have; the
    limit resets {limit_resets}. A page that does not fit at the level asked for comes at a coarser
    `level`, or at none (null, empty content) when no level fits; `reason` says why.
    """
    runtime = ctx.request_context.lifespan_context
    result = await runtime.scope(session).page_fault(page_id=page_id, target_level=Level(target_level))
    if not result.already_mapped:
        await working_set_changed(ctx, runtime.session(session))
    return result


async def search_pages(
    query: Query,
    ctx: ToolContext,
    limit: Annotated[int, Field(ge=1, le=50, description="How many results at most.")] = 5,
    modality: ModalityFilter = None,
    type: PageTypeFilter = None,
    scope: Scope = SearchScope.ALL,
    session: SessionName = None,
) -> SearchResult:
    """Find stored pages (earlier conversation, notes, facts, tool results) {matching}; an empty
    query lists what is remembered, pinned pages first, then the newest.

    Best matches first, each with its page id, a snippet, its tokens per level and what matched
    (`matched`: words, meaning or both). `score` ranks the hits of this one search (higher is
    better; not comparable across searches). An exact page id finds that page. Then page_fault the
    pages you need.
    """
    runtime = ctx.request_context.lifespan_context
    return await runtime.scope(session).search(
        query=query, limit=limit, page_type=type, modality=modality, scope=scope
    )


async def remember(
    content: Annotated[Content, Field(description="What to keep, in full.")],
    ctx: ToolContext,
    type: RememberType = "note",
    key: Key | None = None,
    summary: Summary = None,
    importance: Annotated[float, Field(ge=0.0, le=1.0, description="How much it matters.")] = 0.5,
    pin: Annotated[
        bool,
        Field(description="List it first whenever search_pages lists what is remembered (empty query)."),
    ] = False,
    scope: RememberScope = "project",
    session: SessionName = None,
    ttl_seconds: Annotated[
        int | None,
        Field(
            ge=1,
            le=MAX_TTL_SECONDS,
            description="Forget it this many seconds from now.",
        ),
    ] = None,
) -> RememberResult:
    """Keep a note, fact, preference, summary or procedure for later turns and conversations.

    Give a `key` to keep one current version of something (a rewrite keeps the old text as
    history, never searched). Returns the page id, whether it was new, its version, its tokens per level.
    """
    runtime = ctx.request_context.lifespan_context
    result = await runtime.scope(session).remember(
        page=NewPage(
            content=content,
            type=PageType(type),
            summary=summary,
            importance=importance,
            pinned=pin,
            provenance="model",
        ),
        key=key,
        ttl_seconds=ttl_seconds,
        everywhere=True if scope == "user" else None,
    )
    if pin or not result.created:
        await working_set_changed(ctx, runtime.session(session))
    else:
        await manifest_changed(ctx, runtime.session(session))
    return result


async def forget(page_id: PageId, ctx: ToolContext) -> ForgetResult:
    """Delete a page for good when the user asks you to forget something: from storage, search and
    every working set, with the values bound from it; its text is then taken out of the database's
    files (`purged`). Find its page id with search_pages first."""
    runtime = ctx.request_context.lifespan_context
    result = await runtime.scope().forget(page_id=page_id)
    await working_set_changed(ctx, runtime.default_session)
    return result


# Said besides where the host puts the working set in the prompt (memvm.server.working_set_fields).
IN_CONTEXT = {
    "page_fault": "The page is also loaded into your context (the working set, which the manifest "
    "lists): reading a page already loaded at that level or finer is free. `mapped` says whether it "
    "is loaded, `evicted` what made room, `faults_left` the loads left this turn, `working_set_tokens` "
    "and `budget_tokens` how full your context is.",
    "search_pages": "`mapped` says whether the page is loaded in your context now, and `level` at "
    "which detail (null when not loaded).",
    "remember": "A pinned page is loaded into your context and never evicted (`mapped` says whether it "
    "is, `reason` why not); claims, summaries and pages of higher `importance` stay in it longest.",
}


def described(fn: Any, in_context: bool, **settings: object) -> str:
    """`fn`'s description for a host that does (`in_context`) or does not put the working set in the prompt."""
    text = docstring(fn, **settings)
    return f"{text}\n\n{IN_CONTEXT[fn.__name__]}" if in_context else text


# What search_pages matches, as its description says it in one phrase.
_MATCHING = {
    True: "by the words they contain and by their meaning, so a question in other words finds them too",
    False: "by the words they contain (search by meaning is off on this server)",
}


def tools(config: EngineConfig, *, in_context: bool) -> list[Tool]:
    """The memory tools, for a host that does (`in_context`) or does not put the working set in the prompt."""
    return [
        Tool.from_function(
            page_fault,
            description=described(
                page_fault,
                in_context,
                max_faults_per_turn=config.max_faults_per_turn,
                limit_resets=fault_limit_resets(
                    config.turn_idle_seconds, turns_from_host=config.turns_from_host
                ),
            ),
            annotations=WRITES_ONCE,
        ),
        Tool.from_function(
            search_pages,
            description=described(search_pages, in_context, matching=_MATCHING[config.semantic_search]),
            annotations=READS,
        ),
        Tool.from_function(
            remember,
            description=described(remember, in_context),
            annotations=WRITES,
        ),
        Tool.from_function(forget, annotations=DELETES),
    ]
