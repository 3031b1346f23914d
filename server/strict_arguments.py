"""Tool arguments are checked strictly, the same way for every tool: no JSON value changes type.

Left alone, pydantic's lax mode turns "yes" and 1 into True and "0.5" into a number, and the SDK
parses a string argument as JSON whenever the parameter is not a plain string, so '[1, 2]' bound
as a tool's result became a list and '{"usd": 5}' passed as `args` an object. A model that sends
the wrong type is told so (memvm.server.errors says which type is expected) and fixes its call;
memvm never guesses what it meant. Unknown argument names are refused too, never dropped.
"""

from typing import Any, cast

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from pydantic import create_model


class VerbatimArguments(FuncMetadata):
    """The SDK's argument handling, minus its parsing of JSON held in string arguments."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


def check_arguments_strictly(tools: list[Tool]) -> None:
    """Make every tool refuse unknown names and values of another JSON type."""
    for tool in tools:
        metadata = tool.fn_metadata
        loose = metadata.arg_model
        # The pydantic plugin types create_model's result as a class of its own, not a subclass.
        strict = cast(
            type[ArgModelBase],
            create_model(loose.__name__, __base__=loose, __cls_kwargs__={"extra": "forbid", "strict": True}),
        )
        tool.fn_metadata = VerbatimArguments(
            arg_model=strict,
            output_schema=metadata.output_schema,
            output_model=metadata.output_model,
            wrap_output=metadata.wrap_output,
        )
        tool.parameters = strict.model_json_schema(by_alias=True)
