"""Argument errors in plain words: a name that breaks its pattern is told the rule, never the regex."""

import json

import pytest
from memvm.server.errors import _pattern_words
from memvm.server.settings import ToolProfile

from tests.server.conftest import call_error

pytestmark = pytest.mark.anyio


def patterns(schema: object) -> list[str]:
    if isinstance(schema, dict):
        found = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
        return found + [p for value in schema.values() for p in patterns(value)]
    if isinstance(schema, list):
        return [p for value in schema for p in patterns(value)]
    return []


async def test_every_name_pattern_of_every_tool_has_words(connect):
    async with connect(tools=ToolProfile.ALL) as client:
        tools = (await client.list_tools()).tools
    found = {p for tool in tools for p in patterns(json.loads(json.dumps(tool.input_schema)))}
    assert found and all(_pattern_words(p) is not None for p in found), found


async def test_a_session_name_with_a_space_is_refused_with_the_rule(connect):
    async with connect() as client:
        message = await call_error(client, "page_fault", page_id="msg_000001", session=" desk")
    assert "session: must be 1 to 64 characters (letters, digits, _, ., : and -)" in message
    assert "starting with a letter or digit" in message and "pattern" not in message and "^" not in message
