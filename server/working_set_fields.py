"""The reply fields about the working set, sent only where the host puts a working set in the prompt.

Under `--tools all` the host calls build_context and sends its message, so what page_fault,
search_pages and remember say about the working set (whether a page is mapped and at which level,
what was evicted, how full the budget is) describes what the model sees. Desktop hosts (`--tools model`) only pass tool replies to the model: there those fields
would describe something it never sees, so the replies leave them out and their output schemas
do not list them. Which profile is served decides it, nothing a client does later.
"""

from collections.abc import Awaitable, Callable
from types import GenericAlias
from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from memvm.engine.models.recall import SearchHit, SearchResult
from memvm.engine.models.working_set import FaultResult
from memvm.engine.models.writes import RememberResult
from pydantic import BaseModel, ConfigDict, Field, create_model

# A fault's `mapped`, `already_mapped` and `faults_left` stay on every host, described without a
# context: whether content came back, whether the read was free, and how many reads are left.
FAULT_FIELDS = frozenset(
    {
        "evicted",
        "working_set_session",
        "working_set_tokens",
        "reserved_tokens",
        "page_budget_tokens",
        "budget_tokens",
        # Names the working set a made-up session gets, and the one the host shows.
        "notice",
    }
)
HIT_FIELDS = frozenset({"mapped", "level"})
REMEMBER_FIELDS = frozenset({"mapped", "reason"})


def without(model: type[BaseModel], fields: frozenset[str], **replaced: Any) -> type[BaseModel]:
    """`model` less `fields` (and with `replaced` fields retyped), read from a `model` by attribute."""
    kept = {
        name: replaced.get(name, (info.annotation, info))
        for name, info in model.model_fields.items()
        if name not in fields
    }
    return create_model(model.__name__, __config__=ConfigDict(from_attributes=True), **kept)


_HIT = without(SearchHit, HIT_FIELDS)

# Each reply type with a working-set field, as a reply without one.
REPLIES: dict[Any, type[BaseModel]] = {
    FaultResult: without(
        FaultResult,
        FAULT_FIELDS,
        reason=(str | None, Field(None, description="Why `content` is not at the level asked for.")),
        mapped=(bool, Field(description="False when no level fit: no content came back; `reason` says why.")),
        already_mapped=(
            bool,
            Field(description="Read at this level or finer before in this session: this read was free."),
        ),
        faults_left=(int, Field(description="Reads left before the per-turn limit.")),
    ),
    SearchResult: without(
        SearchResult, frozenset(), results=(GenericAlias(list, (_HIT,)), SearchResult.model_fields["results"])
    ),
    RememberResult: without(RememberResult, REMEMBER_FIELDS),
}


def leave_out_working_set(tools: list[Tool]) -> None:
    """Make every tool whose reply has working-set fields return and list it without them.

    Run before the arguments are made strict and the listing compacted: both keep the output
    model and schema set here.
    """
    for tool in tools:
        reply = REPLIES.get(tool.fn_metadata.output_model)
        if reply is None:
            continue
        tool.fn = _replying(tool.fn, reply)
        tool.fn_metadata = FuncMetadata(arg_model=tool.fn_metadata.arg_model, output_model=reply)


def _replying(
    fn: Callable[..., Awaitable[BaseModel]], reply: type[BaseModel]
) -> Callable[..., Awaitable[Any]]:
    # The structured content and the JSON text block are both made from what the function returns.
    async def shaped(**arguments: Any) -> BaseModel:
        return reply.model_validate(await fn(**arguments), from_attributes=True)

    return shaped
