"""The real server in a subprocess over stdio, driven by the official client."""

import os
import subprocess
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# A 2-core machine under load can take seconds to start a Python server.
START_LIMIT = 60


def server(db, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memvm.server", "serve", "--db", str(db), "--tools", "all", *extra],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )


async def test_a_stdio_server_keeps_its_memory_across_a_restart(db_path):
    with anyio.fail_after(START_LIMIT * 2):
        async with Client(server(db_path)) as client:
            stored = await client.call_tool(
                "remember", {"content": "The wifi password is on the fridge.", "key": "wifi"}
            )
            assert not stored.is_error
            fault = await client.call_tool("page_fault", {"page_id": "wifi", "target_level": 0})
            assert fault.structured_content["mapped"] is True
        async with Client(server(db_path), mode="legacy") as client:
            found = await client.call_tool("search_pages", {"query": "wifi password"})
            again = await client.call_tool("page_fault", {"page_id": "wifi", "target_level": 0})
            working_set = await client.read_resource("memvm://current/working-set")
    assert found.structured_content["results"][0]["page_id"] == "wifi"
    assert again.structured_content["already_mapped"] is True
    assert "N wifi: The wifi password is on the fridge." in working_set.contents[0].text


@pytest.mark.parametrize(
    "content", [b"not a database at all\n" * 100, b"SQLite format 3\x00" + b"\x00" * 5000]
)
def test_a_corrupt_file_is_refused_at_start_with_one_line(db_path, content):
    db_path.write_bytes(content)
    done = subprocess.run(
        [sys.executable, "-m", "memvm.server", "serve", "--db", str(db_path)],
        capture_output=True,
        text=True,
        timeout=START_LIMIT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memvm: refusing to open")
    assert db_path.read_bytes() == content
