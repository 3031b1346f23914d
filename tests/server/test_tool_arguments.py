"""Property: whatever arguments arrive, every tool answers with a result or one clear sentence.

One real server and client serve every example, through a blocking portal, so hypothesis drives
the official client exactly as a model's host would. Afterwards the file must still be sound.
"""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.from_thread
from anyio.from_thread import BlockingPortal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings, ToolProfile

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["$v1", "$v2", "$total", "msg_000001", "note", "1,200", "-3.5", "all", "strict"])
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def value_for(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that mostly fit `schema`, now and then anything at all."""
    fitting = _fitting(schema, defs)
    return st.one_of(*[fitting] * 7, json_values)


def _fitting(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        return _fitting(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([_fitting(option, defs) for option in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "string":
        if "pattern" in schema:
            # Python's `$` also matches before a final newline; the schema's (Rust) regex does not.
            pattern = schema["pattern"].removesuffix("$") + r"\Z"
            return st.from_regex(pattern, fullmatch=True) | st.sampled_from(["$v1", "$total", "x"])
        return st.text(max_size=60) | st.sampled_from(["$v1", "pay $total now", "1,200", "note"])
    if kind == "integer":
        low, high = schema.get("minimum", -5), schema.get("maximum", 100)
        return st.integers(low - 1, high + 1)
    if kind == "number":
        return st.floats(schema.get("minimum", -1e6) - 1, schema.get("maximum", 1e6) + 1, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_fitting(schema.get("items", {}), defs), max_size=4)
    if kind == "object" and "properties" in schema:
        return arguments_for(schema, defs)
    if kind == "object":
        return st.dictionaries(st.text(max_size=8), json_values, max_size=4)
    return json_values


def arguments_for(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The required arguments, some optional ones, and now and then one the tool does not take."""
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    fixed = {name: value_for(properties[name], defs) for name in sorted(required)}
    optional = {
        name: value_for(spec, defs) for name, spec in sorted(properties.items()) if name not in required
    }
    stranger = st.dictionaries(st.just("unexpected"), json_values, max_size=1)
    chosen = st.fixed_dictionaries(fixed, optional=optional)
    return st.one_of(chosen, chosen, chosen, st.tuples(chosen, stranger).map(lambda pair: pair[0] | pair[1]))


@contextmanager
def served(db: Path, tools: ToolProfile) -> Iterator[tuple[BlockingPortal, Client]]:
    """A real server and client, callable from synchronous hypothesis tests through a portal."""
    server = build_server(ServerSettings(db=str(db), tools=tools))
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(server)) as client,
    ):
        yield portal, client


def test_every_tool_answers_any_arguments_with_a_result_or_one_sentence(tmp_path):
    db = tmp_path / "memvm.db"
    with served(db, ToolProfile.ALL) as (portal, client):
        tools = portal.call(client.list_tools).tools
        schemas = {tool.name: tool.input_schema for tool in tools}
        strategies = {
            name: arguments_for(schema, schema.get("$defs", {})) for name, schema in schemas.items()
        }
        portal.call(client.call_tool, "bind_value", {"tool": "t", "args": {}, "value": 5, "name": "total"})

        @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            st.sampled_from(sorted(schemas)).flatmap(lambda name: st.tuples(st.just(name), strategies[name]))
        )
        def check(call: tuple[str, dict[str, Any]]) -> None:
            name, arguments = call
            result = portal.call(client.call_tool, name, arguments)
            if not result.is_error:
                assert result.structured_content is not None
                return
            message = result.content[0].text
            assert "internal error" not in message, (name, arguments, message)
            assert not message.startswith("Error executing tool"), (name, arguments, message)
            assert "Traceback" not in message and str(tmp_path) not in message
            assert message.count("\n") == 0 and len(message) < 1_000

        check()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_the_guards_give_a_verdict_on_any_json_arguments(tmp_path):
    db = tmp_path / "memvm.db"
    with served(db, ToolProfile.MODEL) as (portal, client):
        portal.call(client.call_tool, "bind_value", {"tool": "t", "args": {}, "value": 1.5, "name": "total"})
        tool_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}\Z", fullmatch=True)
        objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)

        # Results are mostly scalars; st.recursive alone rarely draws one at the top.
        results = st.one_of(json_scalars, st.text(min_size=1, max_size=40), json_values)

        @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            st.sampled_from(["check_ungrounded", "check_tool_call", "bind_value"]),
            tool_names,
            objects,
            results,
        )
        def check(guard: str, tool: str, args: dict[str, Any], value: Any) -> None:
            arguments = {"tool": tool, "args": args} | ({"value": value} if guard == "bind_value" else {})
            result = portal.call(client.call_tool, guard, arguments)
            if guard == "bind_value" and value is None:
                assert result.is_error and "null" in result.content[0].text
                return
            assert not result.is_error, (guard, arguments, result.content[0].text)
            if guard != "bind_value":
                verdict = result.structured_content["verdict"]
                missing = result.structured_content["resolved_args"] is None
                assert missing == (verdict in ("missing_refs", "block") and missing)

        check()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
