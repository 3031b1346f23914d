"""`memvm demo`: the real server in a subprocess, driven through the official MCP client.

It stores a short conversation, searches it, faults a page at two levels, reads the manifest and
the working set, guards a few tool calls (a bound result, a number from nowhere, a repeated call),
records a failed call and its fix, restarts the server on the same file and shows that the memory,
the bindings and the learned fix are all still there.
"""

import io
import json
import os
import shlex
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ITINERARY = (
    "Day 1, May 14: land at 9:40, check in at the guesthouse in Graça, late lunch at a tasca, sunset at the "
    "Miradouro da Senhora do Monte. Day 2: Alfama on foot, the cathedral, fado in the evening. Day 3: Belém, "
    "the Jerónimos Monastery, the tower, pastéis at the old bakery. Day 4: the Sintra day trip, Pena Palace "
    "first thing to beat the queues, Quinta da Regaleira after lunch. Day 5, May 18: Ana's birthday, a slow "
    "morning in LX Factory, dinner at a vegetarian tasting menu booked for 20:00. Day 6: Cascais by train, "
    "beach afternoon. Day 7, May 21: pack, last coffee, fly home in the afternoon."
)

CONVERSATION = [
    {
        "role": "user",
        "content": "I'm planning a trip to Lisbon in May with my sister Ana. She is vegetarian.",
    },
    {
        "role": "assistant",
        "content": "Lovely! In May Lisbon is warm, around 22°C. Alfama and Belém are worth a day each.",
    },
    {
        "role": "user",
        "content": "We land on May 14 at 9:40 and fly back on May 21. Budget is about 1,800 euros for the two of us.",
    },
    {
        "role": "assistant",
        "content": "Then a guesthouse in Graça keeps you near the trams; I'd reserve the Sintra day trip early.",
    },
    {
        "role": "user",
        "content": "Also remind me that Ana's birthday is on May 18, I want a dinner somewhere special.",
    },
]


# The same booking twice: first with a date the tool rejects, then with the one it wants.
BOOKING_ATTEMPTS = [
    {
        "tool": "book_table",
        "args": {"restaurant": "Arkhe", "date": "18/05/2026", "people": 2},
        "outcome": "failure",
        "error_message": "invalid date '18/05/2026': expected YYYY-MM-DD",
    },
    {
        "tool": "book_table",
        "args": {"restaurant": "Arkhe", "date": "2026-05-18", "people": 2},
        "outcome": "success",
        "result": {"confirmation": "ARK-5521", "time": "20:00"},
        "goal": "Ana's birthday dinner",
    },
]


def _server(db: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memvm.server", "serve", "--db", db, "--tools", "all", "--session", "trip"],
        env={"PYTHONUNBUFFERED": "1", **({"PATH": os.environ["PATH"]} if "PATH" in os.environ else {})},
    )


def bold(text: str) -> str:
    """Bold on a terminal; plain when the output goes to a pipe or a file, or NO_COLOR is set."""
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return f"\033[1m{text}\033[0m"
    return text


def _step(title: str) -> None:
    print("\n" + bold(f"▶ {title}"))


def _show(text: str, width: int = 100) -> None:
    for line in text.splitlines() or [""]:
        print(textwrap.indent(textwrap.shorten(line, width=width, placeholder=" …") if line else "", "    "))


def _say(text: str, width: int = 100) -> None:
    """Show a message the model would read, whole."""
    print(
        textwrap.fill(
            text,
            width=width,
            initial_indent="    ",
            subsequent_indent="    ",
            break_on_hyphens=False,
            break_long_words=False,
        )
    )


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise SystemExit(f"demo: {tool} failed: {result.content[0].text}")  # type: ignore[union-attr]
    return dict(result.structured_content or {})


async def _read(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    return result.contents[0].text  # type: ignore[union-attr]


async def _first_run(db: str) -> str:
    async with Client(_server(db)) as client:
        tools = await client.list_tools()
        _step(f"Started `memvm serve` over stdio; it offers {len(tools.tools)} tools")
        _show(", ".join(tool.name for tool in tools.tools))

        _step("ingest: five conversation messages become transcript pages")
        ingested = await _call(client, "ingest", {"messages": CONVERSATION})
        _show(f"page ids {ingested['page_ids']}, now at turn {ingested['turn']}")

        _step("remember: the model keeps the plan it made, under a key")
        kept = await _call(
            client,
            "remember",
            {
                "content": ITINERARY,
                "type": "note",
                "key": "itinerary",
                "importance": 0.8,
                "summary": "Seven-day Lisbon plan, May 14-21: Alfama, Belém, Sintra, Ana's birthday dinner on May 18.",
            },
        )
        _show(f"{kept['page_id']} created={kept['created']} tokens per level {kept['tokens']}")

        query = "which day is the Sintra trip"
        _step(f"search_pages: {query!r}")
        found = await _call(client, "search_pages", {"query": query, "limit": 3})
        for hit in found["results"]:
            _show(f"{hit['page_id']} score={hit['score']:.2f} mapped={hit['mapped']}  {hit['snippet']}")
        _step(f"search_pages: {query!r}, only notes")
        found = await _call(client, "search_pages", {"query": query, "limit": 3, "type": "note"})
        for hit in found["results"]:
            _show(f"{hit['page_id']} score={hit['score']:.2f} mapped={hit['mapped']}  {hit['snippet']}")
        top = found["results"][0]["page_id"]

        turn = await _call(client, "begin_turn", {})
        _step(f"begin_turn: turn {turn['turn']}, {turn['faults_left']} faults allowed")
        for level in (2, 0):
            _step(f"page_fault {top} at target_level {level}")
            fault = await _call(client, "page_fault", {"page_id": top, "target_level": level})
            _show(
                f"level {fault['level']}, {fault['tokens']} tokens, mapped={fault['mapped']}, "
                f"already_mapped={fault['already_mapped']}, faults_left={fault['faults_left']}"
            )
            _show(fault["content"])

        await _guard_calls(client)
        await _outcomes(client)

        _step("memvm://current/manifest (the map the model reads)")
        manifest = json.loads(await _read(client, "memvm://current/manifest"))
        _show(
            json.dumps(
                {k: manifest[k] for k in ("session", "turn", "policies", "counts")}, ensure_ascii=False
            )
        )
        _step("memvm://current/working-set (what sits in the context)")
        _show(await _read(client, "memvm://current/working-set"))
        return query


async def _guard_calls(client: Client) -> None:
    _step("bind_value: a currency tool answered 1 EUR = 1.0862 USD; keep it as a reference")
    rate = await _call(
        client,
        "bind_value",
        {"tool": "fx_rate", "args": {"from": "EUR", "to": "USD"}, "value": 1.0862, "name": "eur_usd"},
    )
    _show(f"{rate['ref']} aliases={rate['aliases']} type={rate['value_type']}")

    proposed = {"amount": 1800, "rate": 1.0862, "fee": 35}
    _step(f"check_ungrounded: convert{json.dumps(proposed)}")
    grounding = await _call(client, "check_ungrounded", {"tool": "convert", "args": proposed})
    _show(f"verdict={grounding['verdict']} (1,800 is the user's own budget, so it needs no source)")
    _say(grounding["message"])

    fixed = {"amount": 1800, "rate": "$eur_usd"}
    _step(f"check_tool_call: convert{json.dumps(fixed)}")
    check = await _call(client, "check_tool_call", {"tool": "convert", "args": fixed})
    _say(f"verdict={check['verdict']} resolved_args={check['resolved_args']} budget={check['budget']}")
    converted = await _call(
        client, "bind_value", {"tool": "convert", "args": check["resolved_args"], "value": 1955.16}
    )
    _show(f"the host ran convert and bound its result as {converted['ref']}")

    _step("check_tool_call: the same convert call again")
    again = await _call(client, "check_tool_call", {"tool": "convert", "args": fixed})
    _show(f"verdict={again['verdict']} cached_result={again['cached_result']} ({again['cached_ref']})")
    _say(again["reasons"][0]["message"])


async def _outcomes(client: Client) -> None:
    _step("record_tool_outcome: book_table failed on the date format, then worked")
    failed, fixed = [await _call(client, "record_tool_outcome", call) for call in BOOKING_ATTEMPTS]
    _say(
        f"call {failed['call_id']} failed; call {fixed['call_id']} fixed it with {json.dumps(fixed['fix']['delta'])}"
    )
    _show(f"the result is bound as {fixed['ref']}")


async def _second_run(db: str, query: str) -> None:
    async with Client(_server(db)) as client:
        _step("Restarted the server on the same file")
        found = await _call(client, "search_pages", {"query": query, "limit": 1})
        hit = found["results"][0]
        _show(f"search still finds {hit['page_id']}: {hit['snippet']}  ({found['total_pages']} pages stored)")
        fault = await _call(client, "page_fault", {"page_id": "itinerary", "target_level": 0})
        _show(
            f"page_fault itinerary: still mapped at level {fault['level']} (already_mapped={fault['already_mapped']})"
        )
        _show((await _read(client, "memvm://current/working-set")).replace("\n", " | "))
        bound = await _call(
            client, "check_ungrounded", {"tool": "pay", "args": {"usd": "$v2", "rate": "$eur_usd"}}
        )
        _show(f"bindings survived too: {{usd: $v2, rate: $eur_usd}} resolves to {bound['resolved_args']}")
        _step("get_procedural_hints after the restart, for the same error in a new booking")
        hints = await _call(
            client,
            "get_procedural_hints",
            {"error_type": "invalid date '21/05/2026': expected YYYY-MM-DD", "max_tokens": 200},
        )
        for line in hints["text"].splitlines():
            _say(line)
        _show(f"({hints['tokens']} tokens, capped at 200)")


async def _demo(db: str, kept: bool) -> None:
    print(f"memvm demo — database: {db}")
    query = await _first_run(db)
    await _second_run(db, query)
    print("\nDone: the memory, the bindings and the learned fix survived a restart.")
    print(what_next(db, kept))


def what_next(db: str, kept: bool) -> str:
    """The demo's last line: how to look at what it stored."""
    if kept:
        return f"See what it stored in your browser: memvm ui --db {shlex.quote(db)}"
    return (
        "That database was temporary and is gone. To keep one and look at it in your browser: "
        "memvm demo --db demo.db && memvm ui --db demo.db"
    )


def run_demo(db: str | None) -> int:
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # watched as it runs, through `| tee` too
    with tempfile.TemporaryDirectory(prefix="memvm-demo-") as scratch:
        anyio.run(_demo, db or str(Path(scratch) / "demo.db"), db is not None)
    return 0
