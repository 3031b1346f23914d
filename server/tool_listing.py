"""What tools/list shows the model: each tool's description and schemas, without repetition.

The model pays for the tool list in tokens on every request. pydantic's schemas repeat each
argument's name as a title, put every enum and nested model behind a `$ref`, and spell an
optional argument as `anyOf [X, null]` with `default: null`; docstrings keep their source
indentation. All of that goes; what each argument takes and means stays. Arguments are still
validated by their models (memvm.server.strict_arguments), not by these schemas, so an optional
argument sent as null is still taken as left out.
"""

import inspect
from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp_types import ToolAnnotations

# What tools/list says each tool does to memory; none reaches outside it.
READS = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
WRITES_ONCE = ToolAnnotations(  # the same call again changes nothing more
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DELETES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

_DEFS = "#/$defs/"
_NULL = {"type": "null"}


def docstring(fn: Any, **settings: object) -> str:
    """A tool function's docstring as the model reads it, with `settings` filled in."""
    return as_read(fn.__doc__ or "").format(**settings)


def as_read(text: str) -> str:
    """`text` dedented, each paragraph on one line: the line breaks inside were the source's wrapping."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in paragraph.splitlines()) for paragraph in paragraphs)


def compact_tool_listing(tools: list[Tool]) -> None:
    """Dedent every tool's description and compact its input and output schemas."""
    for tool in tools:
        tool.description = as_read(tool.description)
        tool.parameters = compact_schema(tool.parameters, optional_null=True)
        if tool.fn_metadata.output_schema is not None:
            # Results do carry nulls, so the output schema keeps them.
            tool.fn_metadata.output_schema = compact_schema(
                tool.fn_metadata.output_schema, optional_null=False
            )


def compact_schema(schema: dict[str, Any], *, optional_null: bool) -> dict[str, Any]:
    """`schema` with definitions inlined and titles dropped; with `optional_null`, optional
    arguments lose their `null` alternative and their `default: null`."""
    return _compact(schema, schema.get("$defs", {}), optional_null, expanding=())


def _compact(
    node: dict[str, Any], defs: dict[str, Any], optional_null: bool, expanding: tuple[str, ...]
) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS):
        name = ref.removeprefix(_DEFS)
        if name in expanding:
            raise ValueError(f"the schema of {name} refers to itself and cannot be inlined")
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return _compact({**defs[name], **siblings}, defs, optional_null, (*expanding, name))
    if optional_null and "default" in node and node["default"] is None:
        # Leaving the argument out says the same; the schema of the value itself is what remains.
        rest = {key: value for key, value in node.items() if key not in ("anyOf", "default")}
        options = [option for option in node.get("anyOf", []) if option != _NULL]
        if len(options) == 1:
            rest = {**options[0], **rest}
        elif options:
            rest["anyOf"] = options
        return _compact(rest, defs, optional_null, expanding)
    compacted: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs") or (key == "additionalProperties" and value is True):
            continue
        if key == "properties":
            value = {name: _compact(spec, defs, optional_null, expanding) for name, spec in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            value = _compact(value, defs, optional_null, expanding)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            value = [_compact(option, defs, optional_null, expanding) for option in value]
        compacted[key] = value
    return compacted
