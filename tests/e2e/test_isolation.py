"""Isolation: one token's memory is out of another's reach by every route a client has.

Alice (one bearer token, one namespace) stores pages, a binding, a recorded tool call and a
working set. Bob (another token) then tries every way in: her page ids in every tool that takes
one, her session name, FTS5 column syntax, her resources, her reference names, and her MCP session
id on the raw transport. Each reply Bob gets is a step; a step whose reply carries anything of
Alice's is a cross read. A foreign page id must look exactly like a missing one.
"""

import json

import anyio
import httpx2
import pytest

from tests.e2e.test_http import ALICE, BOB, INITIALIZE, START_LIMIT, client, http_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SECRET = "OTTERVAULT4417"
ALICE_SESSION = "alice-trip"
# What only Alice's memory holds; none of it may appear in any reply to Bob.
MARKERS = (SECRET, "alice_ledger", "9931.5", "ferry at dawn")


async def ask(connected, name: str, arguments: dict) -> tuple[bool, dict, str]:
    """One tool call: whether it failed, its structured result, its text."""
    result = await connected.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""
    return result.is_error, result.structured_content or {}, text


def leaked(text: str) -> bool:
    return any(marker in text for marker in MARKERS)


async def alice_writes(url: str) -> list[str]:
    """Alice's memory; returns her page ids."""
    s = {"session": ALICE_SESSION}
    async with client(url, ALICE) as alice:
        _, stored, _ = await ask(
            alice, "remember", {"content": f"The vault code is {SECRET}.", "key": "vault", **s}
        )
        messages = [{"role": "user", "content": "Book the ferry at dawn.", "name": "alice"}]
        _, ingested, _ = await ask(alice, "ingest", {"messages": messages, **s})
        await ask(alice, "page_fault", {"page_id": "vault", "target_level": 0, **s})
        binding = {"tool": "alice_ledger", "args": {}, "value": 9931.5, "name": "alice_total"}
        await ask(alice, "bind_value", {**binding, **s})
        outcome = {
            "tool": "alice_ledger",
            "args": {"q": SECRET},
            "outcome": "success",
            "goal": "ferry at dawn",
        }
        await ask(alice, "record_tool_outcome", {**outcome, **s})
    return [stored["page_id"], *ingested["page_ids"]]


async def read(connected, uri: str) -> str:
    try:
        return str(await connected.read_resource(uri))
    except Exception as exc:  # the client raises the server's error for a failed read
        return str(exc)


def other_id(page_id: str) -> str:
    """An id of the same shape that nobody has."""
    return page_id[:-1] + ("x" if page_id[-1] != "x" else "y")


async def test_another_token_never_reads_this_tokens_memory(db_url, tokens, report_figure):
    replies: list[tuple[str, str]] = []  # (step, reply text) for each of Bob's attempts
    foreign_vs_missing: list[tuple[str, str]] = []
    s = {"session": ALICE_SESSION}
    with http_server(db_url, tokens, "--tools", "all") as url, anyio.fail_after(START_LIMIT * 3):
        alice_ids = await alice_writes(url)
        async with client(url, BOB) as bob:

            async def attempt(step: str, name: str, arguments: dict) -> str:
                _, structured, text = await ask(bob, name, arguments)
                replies.append((step, text + json.dumps(structured)))
                return text

            queries = (
                SECRET,
                f"content: {SECRET}",
                "speaker: alice",
                "pages_fts: vault",
                "* OR vault",
                "ferry",
            )
            for query in queries:
                for scope in ("all", "session"):
                    await attempt(f"search {query!r}", "search_pages", {"query": query, "scope": scope, **s})
            by_id = (("page_fault", {"target_level": 0}), ("pin_page", {"pinned": True}), ("forget", {}))
            for page_id in alice_ids:
                for name, extra in by_id:
                    foreign = await attempt(f"{name} {page_id}", name, {"page_id": page_id, **extra, **s})
                    absent = other_id(page_id)
                    missing = await attempt(f"{name} {absent}", name, {"page_id": absent, **extra, **s})
                    foreign_vs_missing.append((foreign.replace(page_id, "ID"), missing.replace(absent, "ID")))
                replies.append((f"read page {page_id}", await read(bob, f"memvm://pages/{page_id}")))
            for view in ("manifest", "working-set", "context"):
                for uri in (f"memvm://sessions/{ALICE_SESSION}/{view}", f"memvm://current/{view}"):
                    replies.append((f"read {uri}", await read(bob, uri)))
            await attempt("build_context", "build_context", {"mode": "strict", **s})
            await attempt(
                "hints", "get_procedural_hints", {"tools": ["alice_ledger"], "goal": "ferry at dawn"}
            )
            refs = {"tool": "pay", "args": {"usd": "$alice_total", "v": "$v1"}, **s}
            for guard in ("check_ungrounded", "check_tool_call"):
                await attempt(guard, guard, refs)
            await attempt(
                "rebind", "bind_value", {"tool": "t", "args": {}, "value": 1, "name": "alice_total", **s}
            )
            await attempt("same key", "remember", {"content": "Bob's own vault note.", "key": "vault", **s})

        # Bob's token on Alice's MCP session id, on the raw transport.
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        search = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        search["params"] = {"name": "search_pages", "arguments": {"query": SECRET, **s}}
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(
                url, json=INITIALIZE, headers={**headers, "Authorization": f"Bearer {ALICE}"}
            )
            hijack_headers = {**headers, "Authorization": f"Bearer {BOB}"}
            hijack_headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            hijack = await http.post(url, json=search, headers=hijack_headers)
            replies.append(("reuse session id", f"{hijack.status_code} {hijack.text}"))

        async with client(url, ALICE) as alice:  # Bob's attempts changed nothing of Alice's
            _, still, _ = await ask(alice, "page_fault", {"page_id": "vault", "target_level": 0, **s})
            _, checked, _ = await ask(
                alice, "check_ungrounded", {"tool": "pay", "args": {"usd": "$alice_total"}, **s}
            )

    cross_reads = [step for step, text in replies if leaked(text)]
    alike = sum(foreign == missing for foreign, missing in foreign_vs_missing)
    report_figure(
        f"isolation: steps={len(replies)} cross_reads={len(cross_reads)} "
        f"foreign_like_missing={alike}/{len(foreign_vs_missing)}"
    )
    assert cross_reads == []
    assert alike == len(foreign_vs_missing)
    assert SECRET in still["content"]  # not forgotten, not overwritten by Bob's key
    assert checked["verdict"] == "grounded"  # Alice's $alice_total still resolves to her value
