"""The real server in a subprocess over stdio, driven by the official client."""

import os
import subprocess
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

# The first test (one server restart) and the refusal stay in the fast stage: one real stdio
# subprocess there; the rest run with the end-to-end stage. On SQLite: the transport is the
# subject, and what the tools store is checked on both backends in process (tests/server/).
pytestmark = [pytest.mark.anyio, pytest.mark.above_storage]

# A 2-core machine under load can take seconds to start a Python server.
START_LIMIT = 60


def server(db, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memvm.server", "serve", "--db", str(db), "--tools", "all", *extra],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )


async def test_a_stdio_server_keeps_its_memory_across_a_restart(db_url):
    with anyio.fail_after(START_LIMIT * 2):
        async with Client(server(db_url)) as client:
            stored = await client.call_tool(
                "remember", {"content": "The wifi password is on the fridge.", "key": "wifi"}
            )
            assert not stored.is_error
            fault = await client.call_tool("page_fault", {"page_id": "wifi", "target_level": 0})
            assert fault.structured_content["mapped"] is True
        async with Client(server(db_url), mode="legacy") as client:
            found = await client.call_tool("search_pages", {"query": "wifi password"})
            again = await client.call_tool("page_fault", {"page_id": "wifi", "target_level": 0})
            working_set = await client.read_resource("memvm://current/working-set")
    assert found.structured_content["results"][0]["page_id"] == "wifi"
    assert again.structured_content["already_mapped"] is True
    assert "N wifi: The wifi password is on the fridge." in working_set.contents[0].text


@pytest.mark.slow
async def test_guard_settings_from_the_command_line_and_their_state_survive_a_restart(db_url, tmp_path):
    overrides = tmp_path / "guards.json"
    overrides.write_text('{"tool_caps": {"send_email": 1}, "polling_tools": ["job_status"]}')
    flags = ("--guards", "strict", "--guard-config", str(overrides))
    with anyio.fail_after(START_LIMIT * 2):
        async with Client(server(db_url, *flags)) as client:
            bound = await client.call_tool("bind_value", {"tool": "fx", "args": {"eur": 9}, "value": 9.73})
            sent = await client.call_tool("check_tool_call", {"tool": "send_email", "args": {"to": "a"}})
        async with Client(server(db_url, *flags), mode="legacy") as client:
            capped = await client.call_tool("check_tool_call", {"tool": "send_email", "args": {"to": "b"}})
            polls = [
                await client.call_tool("check_tool_call", {"tool": "job_status", "args": {"id": "j"}})
                for _ in range(3)
            ]
            resolved = await client.call_tool("check_ungrounded", {"tool": "pay", "args": {"usd": "$v1"}})
    assert bound.structured_content["ref"] == "$v1"
    assert sent.structured_content["verdict"] == "allow"
    # Strict blocks at the first violation; the cap of 1 was used before the restart.
    assert capped.structured_content["verdict"] == "block"
    assert capped.structured_content["reasons"][0]["rule"] == "tool_cap"
    assert [poll.structured_content["verdict"] for poll in polls] == ["allow"] * 3
    assert resolved.structured_content["resolved_args"] == {"usd": 9.73}


def test_an_unusable_guard_config_is_refused_with_one_line(db_url, tmp_path):
    overrides = tmp_path / "guards.json"
    overrides.write_text('{"grace": -1}')
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memvm.server",
            "serve",
            "--db",
            str(db_url),
            "--guard-config",
            str(overrides),
        ],
        capture_output=True,
        text=True,
        timeout=START_LIMIT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"memvm: invalid guard settings in {overrides} (grace)"]


@pytest.mark.slow
async def test_procedural_memory_survives_a_restart_over_stdio(db_url):
    failed = {"tool": "pay", "args": {"iban": "DE00 1"}, "outcome": "failure", "error_type": "BadIban"}
    fixed = {"tool": "pay", "args": {"iban": "DE001"}, "outcome": "success", "result": {"ok": True}}
    with anyio.fail_after(START_LIMIT * 2):
        async with Client(server(db_url)) as client:
            await client.call_tool("record_tool_outcome", failed)
            linked = await client.call_tool("record_tool_outcome", fixed)
        async with Client(server(db_url, "--session", "next-day"), mode="legacy") as client:
            hints = await client.call_tool("get_procedural_hints", {"error_type": "BadIban"})
    assert linked.structured_content["fix"]["fixed_call_id"] == 1
    assert hints.structured_content["guidance"][0]["delta"]["changed"] == {
        "iban": {"from": "DE00 1", "to": "DE001"}
    }
    assert 'Earlier fix for "BadIban": pay call 1 failed' in hints.structured_content["text"]
