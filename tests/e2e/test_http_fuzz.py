"""Bad input over the wire: JSON that the official client would never send, into every argument.

Raw JSON text lets through what a Python client cannot encode: lone surrogates, NaN and Infinity
tokens, numbers beyond any float, nesting 100,000 deep, NUL escapes, a 7 MB string. Each goes
into each argument of each tool, in an otherwise valid call. Every reply must be a tool result,
a tool error or a JSON-RPC parse error, never a traceback, path or SQL; the server must go on
answering and its log must hold no traceback.
"""

import json
from pathlib import Path

import httpx2
import pytest

from tests.e2e.test_http import INITIALIZE, http_server
from tests.server.test_tool_arguments import LEAK

# On SQLite: the same hostile values reach both backends in process (tests/server/test_tool_arguments.py).
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.above_storage]

# A valid call of every tool; each hostile token replaces one argument at a time.
BASE: dict[str, dict[str, object]] = {
    "page_fault": {"page_id": "probe", "target_level": 2, "session": "s"},
    "search_pages": {"query": "probe page", "limit": 5, "scope": "all"},
    "remember": {"content": "A probe page.", "key": "probe", "importance": 0.5, "summary": "probe"},
    "bind_value": {"tool": "fx", "args": {"pair": "EURUSD"}, "value": 1.08, "name": "rate"},
    "check_ungrounded": {"tool": "pay", "args": {"usd": 12.5}},
    "check_tool_call": {"tool": "pay", "args": {"usd": "$rate"}},
    "record_tool_outcome": {
        "tool": "pay",
        "args": {"usd": 3},
        "outcome": "failure",
        "error_type": "E",
        "error_message": "bad",
        "duration_ms": 4.5,
        "goal": "pay",
        "result": 1,
    },
    "get_procedural_hints": {"tools": ["pay"], "goal": "pay", "error_type": "E", "max_tokens": 600},
    "ingest": {"messages": [{"role": "user", "content": "hello there", "name": "ann"}]},
    "begin_turn": {"session": "s"},
    "pin_page": {"page_id": "probe", "pinned": True},
    "forget": {"page_id": "gone"},
    "build_context": {"mode": "strict", "system_prompt": "Be brief."},
}
# Raw JSON values, spliced in as text.
HOSTILE = {
    "nan": "NaN",
    "inf": "Infinity",
    "-inf": "-Infinity",
    "1e999": "1e999",
    "bigint": "1" + "0" * 400,
    "surrogate": '"\\ud800"',
    "surrogate_pair_half": '"x\\udfffy"',
    "nul": '"a\\u0000b"',
    "deep": "[" * 100_000 + "]" * 100_000,
    "deep_object": '{"k":' * 5_000 + "1" + "}" * 5_000,
    "huge": '"' + "h" * 7_000_000 + '"',
    "key_surrogate": '{"\\ud800": 1}',
    "fts": '"NEAR(alpha OR content:x -y *"',
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def reply(response: httpx2.Response) -> dict:
    """The JSON-RPC message in a reply, whether sent as JSON or as one server-sent event."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def call_body(tool: str, arguments: dict[str, object], name: str, raw: str) -> str:
    """A tools/call request whose argument `name` is the raw JSON text `raw`."""
    marker = "__HOSTILE__"
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {**arguments, name: marker}},
    }
    return json.dumps(body).replace(json.dumps(marker), raw, 1)


async def test_hostile_json_in_every_argument_gets_a_clean_answer(tmp_path: Path, db_url: str, report_figure):
    log = tmp_path / "server.log"
    outcomes = {"result": 0, "tool_error": 0, "parse_error": 0, "too_large": 0}
    leaks: list[str] = []
    with http_server(db_url, None, "--tools", "all", log=log) as url:
        async with httpx2.AsyncClient(timeout=120) as http:
            opened = await http.post(url, json=INITIALIZE, headers=HEADERS)
            headers = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            headers["MCP-Protocol-Version"] = INITIALIZE["params"]["protocolVersion"]
            await http.post(
                url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
            listed = reply(
                await http.post(
                    url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
                )
            )
            assert {tool["name"] for tool in listed["result"]["tools"]} == set(BASE)
            for tool, arguments in BASE.items():
                for name in [*arguments, "unexpected"]:
                    for raw in HOSTILE.values():
                        response = await http.post(
                            url, content=call_body(tool, arguments, name, raw), headers=headers
                        )
                        if response.status_code == 413:
                            outcomes["too_large"] += 1
                            continue
                        if (
                            LEAK.search(response.text)
                            or str(tmp_path) in response.text
                            or "postgresql://" in response.text
                        ):
                            leaks.append(f"{tool}.{name}: {response.text[:200]}")
                        message = reply(response)
                        if "error" in message:
                            assert message["error"]["code"] in (-32700, -32600, -32602), message
                            outcomes["parse_error"] += 1
                        elif message["result"].get("isError"):
                            text = message["result"]["content"][0]["text"]
                            assert "internal error" not in text and not text.startswith("Error executing")
                            outcomes["tool_error"] += 1
                        else:
                            outcomes["result"] += 1
            probe = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
            probe["params"] = {"name": "search_pages", "arguments": {"query": "probe page"}}
            still = reply(await http.post(url, json=probe, headers=headers))
    requests = sum(outcomes.values())
    stderr = log.read_text(errors="replace")
    report_figure(
        f"fuzz_http: requests={requests} "
        + " ".join(f"{kind}={count}" for kind, count in outcomes.items())
        + f" leaks={len(leaks)} tracebacks={stderr.count('Traceback')}"
    )
    assert leaks == []
    assert "Traceback" not in stderr
    assert not still["result"].get("isError")
    assert outcomes["parse_error"] and outcomes["tool_error"]
