"""One tenant at its share cannot keep the others from writing: `memvm serve --max-namespace-mb 1`
over HTTP with two tokens, on both backends. Alice fills her share with what is not a page (bound
values and a recorded call's arguments, which count as page text does); every write of hers is
then refused with a sentence that says what to do, and Bob's writes all go through."""

import anyio
import pytest

from tests.e2e.test_http import ALICE, BOB, START_LIMIT, client, http_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LISTING = "a long listing " * 30_000  # 450,000 characters


async def call(connected, name: str, **arguments) -> tuple[bool, str]:
    result = await connected.call_tool(name, arguments)
    return result.is_error, result.content[0].text if result.content else ""


async def writes(connected, label: str) -> list[tuple[str, bool, str]]:
    """One write of each kind a client has: (tool, refused, text)."""
    done = []
    for tool, arguments in (
        ("remember", {"content": f"{label} keeps a short note"}),
        ("bind_value", {"tool": "read", "args": {"who": label}, "value": 42}),
        ("record_tool_outcome", {"tool": "send", "args": {"to": label}, "outcome": "success"}),
    ):
        refused, text = await call(connected, tool, **arguments)
        done.append((tool, refused, text))
    return done


async def test_a_tenant_at_its_share_is_refused_and_the_other_writes_on(db_url, tokens, report_figure):
    with http_server(db_url, tokens, "--max-namespace-mb", "1", "--tools", "all") as url:
        with anyio.fail_after(START_LIMIT * 3):
            async with client(url, ALICE) as alice:
                for i in range(2):
                    refused, text = await call(
                        alice, "bind_value", tool="read", args={"part": i}, value=LISTING
                    )
                    assert not refused, text
                body = {"body": "b" * 200_000}
                refused, text = await call(
                    alice, "record_tool_outcome", tool="upload", args=body, outcome="success"
                )
                assert not refused, text
                alices = await writes(alice, "alice")
            async with client(url, BOB) as bob:
                bobs = await writes(bob, "bob")
    sentence = (
        "This memory is at its size limit (1 MB of text), so nothing was saved; most of it is bound "
        "values, recorded tool calls and earlier versions of notes: forget notes you no longer need, "
        "or ask the operator for a larger share."
    )
    assert [(tool, refused, text) for tool, refused, text in alices] == [
        (tool, True, sentence) for tool, _, _ in alices
    ]
    assert [refused for _, refused, _ in bobs] == [False, False, False], bobs
    backend = "postgresql" if str(db_url).startswith("postgresql") else "sqlite"
    report_figure(
        f"namespace_quota: backend={backend} quota_mb=1 filled_by=bound_values+tool_call "
        f"refused={sum(r for _, r, _ in alices)}/{len(alices)} "
        f"other_tenant_writes={sum(not r for _, r, _ in bobs)}/{len(bobs)}"
    )
