"""Every tool argument is checked the same strict way: a JSON value is never converted to another type.

A string is never a number, a boolean, a list or an object; a number is never a boolean, nor a
boolean a number. The refusal names the argument and the type it must be, so the model can fix
its call.
"""

from typing import Any

import pytest
from mcp import Client

from tests.server.conftest import call, call_error

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "search_pages",
            {"query": "x", "limit": "5"},
            "limit: must be a whole number written without quotes",
        ),
        ("remember", {"content": "x", "pin": "yes"}, "pin: must be true or false written without quotes"),
        ("remember", {"content": "x", "pin": 1}, "pin: must be true or false, not a whole number"),
        ("remember", {"content": "x", "importance": True}, "importance: must be a number, not true or false"),
        ("remember", {"content": "x", "importance": "0.5"}, "importance: must be a number written without"),
        (
            "page_fault",
            {"page_id": "x", "target_level": 2.0},
            "target_level: must be a whole number, not a decimal number",
        ),
        (
            "record_tool_outcome",
            {"tool": "pay", "args": {}, "outcome": "success", "duration_ms": "12"},
            "duration_ms: must be a number written without quotes",
        ),
        (
            "check_tool_call",
            {"tool": "pay", "args": '{"usd": 5}'},
            "args: must be a JSON object, not a string",
        ),
        ("get_procedural_hints", {"tools": '["pay"]'}, "tools: must be a list, not a string"),
        (
            "get_procedural_hints",
            {"max_tokens": True},
            "max_tokens: must be a whole number, not true or false",
        ),
        ("pin_page", {"page_id": "x", "pinned": "false"}, "pinned: must be true or false written without"),
        ("build_context", {"mode": 1}, "mode: must be 'strict', 'relaxed' or 'passive'"),
        ("ingest", {"messages": [{"role": "user", "content": 5}]}, "messages.0.content: must be a string"),
        ("search_pages", {"query": "x", "modality": True}, "modality: must be 'text'"),
    ],
)
async def test_a_value_of_the_wrong_type_is_refused_naming_the_type_it_must_be(
    connect, tool, arguments, expected
):
    async with connect() as client:
        text = await call_error(client, tool, **arguments)
    assert text.startswith(f"Invalid arguments for {tool} (")
    assert expected in text


async def test_enum_values_and_whole_numbers_for_decimals_are_accepted(connect):
    async with connect() as client:
        stored = await call(
            client, "remember", content="Tea at four.", type="preference", importance=1, pin=True
        )
        found = await call(
            client, "search_pages", query="tea", modality="text", type="preference", scope="session"
        )
        outcome = await call(
            client, "record_tool_outcome", tool="pay", args={"usd": 5}, outcome="success", duration_ms=12
        )
        context = await call(client, "build_context", mode="relaxed")
        ingested = await call(client, "ingest", messages=[{"role": "user", "content": "Hello"}])
    assert [hit["page_id"] for hit in found["results"]] == [stored["page_id"]]
    assert outcome["call_id"] and context["tokens"] > 0 and len(ingested["page_ids"]) == 1


async def test_a_string_that_looks_like_json_stays_a_string(connect):
    async with connect() as client:
        listed = await call(client, "bind_value", tool="read", args={}, value="[1, 2]")
        nothing = await call(client, "bind_value", tool="read", args={"n": 1}, value="null")
    assert listed["value_type"] == nothing["value_type"] == "string"


# One value of each JSON type; an integer also fits "number".
SAMPLES: dict[str, Any] = {
    "string": "5",
    "integer": 5,
    "number": 2.5,
    "boolean": True,
    "null": None,
    "array": [],
    "object": {},
}


def accepted_types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema takes, or None when it takes any value."""
    if "$ref" in schema:
        return accepted_types(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        options = [accepted_types(option, defs) for option in schema["anyOf"]]
        return None if None in options else set().union(*options)  # type: ignore[arg-type]
    if "enum" in schema:
        return {"string" if isinstance(value, str) else "integer" for value in schema["enum"]}
    kind = schema.get("type")
    if kind is None:
        return None
    return {kind, "integer"} if kind == "number" else {kind}


async def wrong_type_refusals(client: Client) -> list[str]:
    """Every argument of every tool, given each JSON type it does not take: what is not refused as such."""
    misses = []
    for tool in (await client.list_tools()).tools:
        schema = tool.input_schema
        for name, spec in schema["properties"].items():
            accepted = accepted_types(spec, schema.get("$defs", {}))
            if accepted is not None and name not in schema.get("required", []) and "default" not in spec:
                accepted.add("null")  # an argument that defaults to null may be sent as null
            for kind, value in SAMPLES.items():
                if accepted is None or kind in accepted:
                    continue
                result = await client.call_tool(tool.name, {name: value})
                text = result.content[0].text
                if not (result.is_error and f"{name}: must be" in text):
                    misses.append(f"{tool.name}.{name}={value!r}: {text[:120]}")
    return misses


async def test_every_argument_of_every_tool_refuses_every_json_type_it_does_not_take(connect):
    async with connect() as client:
        assert await wrong_type_refusals(client) == []
