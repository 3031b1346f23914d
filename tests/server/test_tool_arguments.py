"""Property: whatever arguments arrive, every tool answers with a result or one clear sentence.

One real server and client serve every example, through a blocking portal, so hypothesis drives
the official client exactly as a model's host would. Besides values that fit the schemas, the
examples draw hostile ones: huge and negative numbers, NaN and infinities, NUL, 10 MB strings,
deep nesting, keys the tool does not take, and FTS5 syntax as search queries. (A lone surrogate
cannot leave the official client, which refuses to encode it; tests/e2e/test_http_fuzz.py sends
those, raw NaN and absurd nesting over HTTP.) No reply may carry a traceback, a path or SQL, and
the file must still be sound afterwards.
"""

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest
from anyio.from_thread import BlockingPortal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings, ToolProfile

from tests.conftest import examples

# FTS5 syntax that breaks an unquoted MATCH or names a column (the schema would leak).
FTS_PROBES = [
    "alpha OR",
    "NEAR(alpha",
    "*",
    "''",
    "-alpha",
    "content:secret",
    "speaker:bob",
    "{content speaker}: x",
    '"unbalanced',
    "^start",
    "a AND (b",
    "pages_fts",
    "rank:1",
    'x" OR 1=1 --',
]
TEN_MB = "m" * 10_000_000


def nested(depth: int) -> Any:
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


HOSTILE = [
    2**80,
    -(2**80),
    10**400,
    -1,
    1e308,
    -1e308,
    -0.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    "a\x00b",
    "\x00",
    TEN_MB,
    nested(120),
    *FTS_PROBES,
]
hostile = st.sampled_from(HOSTILE)
# What no reply may contain: traceback, source path, SQL or SQLite's own words.
LEAK = re.compile(
    r"Traceback|File \"|\.py\b|site-packages|sqlite|SELECT |INSERT |UPDATE |no such column|fts5|syntax error",
    re.IGNORECASE,
)

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
    """Values that mostly fit `schema`, now and then anything at all, or something hostile."""
    fitting = _fitting(schema, defs)
    return st.one_of(*[fitting] * 6, json_values, hostile)


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
        return st.text(max_size=60) | st.sampled_from(["$v1", "pay $total now", "1,200", "note", *FTS_PROBES])
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


def reply_text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.slow
def test_every_tool_answers_any_arguments_with_a_result_or_one_sentence(tmp_path, report_figure):
    db = tmp_path / "memvm.db"
    seen = {"examples": 0, "errors": 0, "hostile": 0}
    crashes: list[tuple[str, str]] = []
    leaks: list[tuple[str, str]] = []
    with served(db, ToolProfile.ALL) as (portal, client):
        tools = portal.call(client.list_tools).tools
        schemas = {tool.name: tool.input_schema for tool in tools}
        strategies = {
            name: arguments_for(schema, schema.get("$defs", {})) for name, schema in schemas.items()
        }
        portal.call(client.call_tool, "bind_value", {"tool": "t", "args": {}, "value": 5, "name": "total"})
        portal.call(
            client.call_tool, "remember", {"content": "A page for the probes to find.", "key": "probe"}
        )

        @settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            st.sampled_from(sorted(schemas)).flatmap(lambda name: st.tuples(st.just(name), strategies[name]))
        )
        def check(call: tuple[str, dict[str, Any]]) -> None:
            name, arguments = call
            seen["examples"] += 1
            seen["hostile"] += any(value is h for value in arguments.values() for h in HOSTILE)
            result = portal.call(client.call_tool, name, arguments)
            reply = reply_text(result)
            if LEAK.search(reply) or str(tmp_path) in reply:
                leaks.append((name, reply[:300]))
            if not result.is_error:
                assert result.structured_content is not None
                return
            seen["errors"] += 1
            if "internal error" in reply or reply.startswith("Error executing tool"):
                crashes.append((name, reply[:300]))
            assert reply.count("\n") == 0 and len(reply) < 1_000

        check()
        # Still answering, and the probes' page is still found.
        found = portal.call(client.call_tool, "search_pages", {"query": "probes to find"})
        assert [hit["page_id"] for hit in found.structured_content["results"]][:1] == ["probe"]
    report_figure(
        f"fuzz: examples={seen['examples']} tool_errors={seen['errors']} hostile_args={seen['hostile']} "
        f"crashes={len(crashes)} leaks={len(leaks)}"
    )
    assert crashes == [] and leaks == []
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_fts_syntax_in_a_query_is_searched_as_words(tmp_path):
    with served(tmp_path / "memvm.db", ToolProfile.MODEL) as (portal, client):
        portal.call(client.call_tool, "remember", {"content": "Alpha NEAR the content column.", "key": "a"})
        for probe in FTS_PROBES:
            result = portal.call(client.call_tool, "search_pages", {"query": probe})
            assert not result.is_error, (probe, reply_text(result))
            assert not LEAK.search(reply_text(result))
        hits = portal.call(client.call_tool, "search_pages", {"query": "NEAR(alpha"}).structured_content
        assert [hit["page_id"] for hit in hits["results"]] == ["a"]


@pytest.mark.properties
def test_the_guards_give_a_verdict_on_any_json_arguments(tmp_path):
    db = tmp_path / "memvm.db"
    with served(db, ToolProfile.MODEL) as (portal, client):
        portal.call(client.call_tool, "bind_value", {"tool": "t", "args": {}, "value": 1.5, "name": "total"})
        tool_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}\Z", fullmatch=True)
        objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)

        # Results are mostly scalars; st.recursive alone rarely draws one at the top.
        results = st.one_of(json_scalars, st.text(min_size=1, max_size=40), json_values)

        @settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


def unbounded(schema: dict[str, Any], defs: dict[str, Any], path: str) -> list[str]:
    """Where a schema lets through a value of any size: a string, number, list or object without a bound."""
    if "$ref" in schema:
        return unbounded(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, path)
    if "anyOf" in schema:
        return [gap for option in schema["anyOf"] for gap in unbounded(option, defs, path)]
    if "enum" in schema or "const" in schema:
        return []
    kind = schema.get("type")
    bounded = {
        "string": "maxLength" in schema or "pattern" in schema,
        "integer": "maximum" in schema and "minimum" in schema,
        "number": "maximum" in schema and "minimum" in schema,
        "array": "maxItems" in schema,
        "object": "maxProperties" in schema or "properties" in schema,
        "boolean": True,
        "null": True,
    }.get(kind, "at most" in schema.get("description", ""))  # any JSON: its bound is in words
    gaps = [] if bounded else [path]
    if kind == "array":
        gaps += unbounded(schema.get("items", {}), defs, f"{path}[]")
    for name, spec in schema.get("properties", {}).items():
        gaps += unbounded(spec, defs, f"{path}.{name}")
    return gaps


def test_every_argument_of_every_tool_carries_its_bound_in_the_schema(tmp_path):
    with served(tmp_path / "memvm.db", ToolProfile.ALL) as (portal, client):
        tools = portal.call(client.list_tools).tools
    gaps = [
        gap
        for tool in tools
        for gap in unbounded(tool.input_schema, tool.input_schema.get("$defs", {}), tool.name)
    ]
    assert gaps == []
