"""One test per flaw measured in chuk-ai-session-manager 0.11.2, showing memvm does not have it."""

import gc
import tracemalloc

import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.guard_config import GuardConfig
from memvm.engine.guards.bindings import bind
from memvm.engine.models.pages import Level, Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage
from memvm.resources.budget import with_reserve
from memvm.resources.context import render_developer_message
from memvm.resources.rules import RuleMode

from tests.conftest import NS, assistant, long_text, note, user

pytestmark = pytest.mark.anyio


async def test_flaw_everything_lost_on_restart(open_engine):
    engine = await open_engine()
    stored = await engine.session(NS, "s").remember(page=note("durable fact about otters"))
    await engine.close()
    reopened = await open_engine()
    found = await reopened.session(NS, "s").search(query="otters")
    assert [hit.page_id for hit in found.results] == [stored.page_id]


async def test_flaw_target_level_has_no_effect(engine):
    stored = await engine.session(NS, "s").remember(page=note(long_text("ferry", 16)))
    abstract = await engine.session(NS, "s").page_fault(page_id=stored.page_id, target_level=Level.ABSTRACT)
    await engine.session(NS, "s").begin_turn()
    full = await engine.session(NS, "s").page_fault(page_id=stored.page_id, target_level=Level.FULL)
    assert abstract.tokens <= 48 < full.tokens
    assert abstract.content != full.content


async def test_flaw_refault_charged_again_and_counted_twice(engine):
    stored = await engine.session(NS, "s").remember(page=note(long_text("canal", 4)))
    first = await engine.session(NS, "s").page_fault(page_id=stored.page_id, target_level=Level.FULL)
    second = await engine.session(NS, "s").page_fault(page_id=stored.page_id, target_level=Level.FULL)
    assert second.faults_left == first.faults_left
    assert second.working_set_tokens == first.working_set_tokens


async def test_flaw_fault_reports_success_when_the_page_could_not_be_mapped(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=940)
    # A pinned page holds the room no level of the next page fits in.
    await engine.session(NS, "s").remember(page=note(long_text("weir", 20), pinned=True))
    before = (await engine.session(NS, "s").working_set()).entries
    stored = await engine.session(NS, "s").remember(page=note(long_text("dam", 20)))
    result = await engine.session(NS, "s").page_fault(page_id=stored.page_id, target_level=Level.FULL)
    assert result.mapped is False and result.reason and result.content == ""
    assert (await engine.session(NS, "s").working_set()).entries == before


async def test_flaw_search_stops_at_the_first_limit_hits_before_sorting(engine):
    for i in range(40):  # half of them say it in passing: a word on every page would weigh nothing
        topic = "volcanoes" if i % 2 == 0 else "glaciers"
        await engine.session(NS, "s").remember(page=note(f"Item {i}: a passing word about {topic}."))
    best = await engine.session(NS, "s").remember(page=note("Volcanoes: volcanoes erupt, volcanoes."))
    result = await engine.session(NS, "s").search(query="volcanoes", limit=3)
    assert result.results[0].page_id == best.page_id


async def test_flaw_budget_ignores_manifest_and_rules_and_the_prompt_grows_without_bound(db_path, clock):
    engine = await Engine.open(db_path, with_reserve(EngineConfig(budget_tokens=3_000)), clock=clock)
    try:
        batch = [IngestMessage(role=Role.USER, content=long_text(f"subject{i}", 2)) for i in range(400)]
        await engine.session(NS, "s").ingest(messages=batch)
        message = await render_developer_message(engine.session(NS, "s"), mode=RuleMode.STRICT)
        assert message.tokens <= 3_000
        assert len(message.text) < 3_000 * 8
    finally:
        await engine.close()


async def test_flaw_every_transcript_line_rendered_as_the_user(engine):
    await engine.session(NS, "s").ingest(messages=[user("Is it raining?"), assistant("Yes, since noon.")])
    lines = [entry.line for entry in (await engine.session(NS, "s").working_set()).entries]
    assert lines == ["U msg_000001: Is it raining?", "A msg_000002: Yes, since noon."]


@pytest.mark.slow
async def test_flaw_memory_grows_with_pages_and_eviction_frees_none(open_engine):
    engine = await open_engine(budget_tokens=2_000)
    text = long_text("gravel", 3)

    async def add(count: int, start: int) -> None:
        for offset in range(0, count, 100):
            batch = [
                IngestMessage(role=Role.ASSISTANT, content=f"{start + offset + i} {text}") for i in range(100)
            ]
            await engine.session(NS, "s").ingest(messages=batch)

    await add(100, 0)  # warm caches and statements first
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await add(300, 100)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert (await engine.session(NS, "s").memory_map()).counts["pages"] == 400
    # The predecessor held ~5 KB per page in RAM (1.5 MB here); memvm's pages live on disk.
    assert grown < 512 * 1024


async def test_flaw_the_ungrounded_warning_lists_every_binding(engine):
    # Two thousand bindings, written in one transaction by the same code bind_value uses.
    await engine.session(NS, "s").ingest(messages=[user("Reconcile the ledger.")])
    async with engine.db.write() as conn:
        for index in range(2_000):
            await bind(
                conn,
                namespace=NS,
                session="s",
                turn=1,
                now=0.0,
                tool="ledger",
                args={"row": index},
                value=10_000 + index,
                name=None,
            )
    # A session keeps its newest 1,000 values (MAX_BINDINGS_PER_SESSION): $v1001 to $v2000.
    args = {"rows": [{"amount": 10_000 + index} for index in range(1_000, 2_000, 5)], "stray": 123_456}
    result = await engine.session(NS, "s").check_ungrounded(args=args)
    assert len(result.ungrounded) == 201
    assert result.ungrounded[0].suggestion == "$v1001"
    assert len(result.message.encode()) < 1_000  # the predecessor's was 79 KB at 10k bindings
    call = await engine.session(NS, "s").check_tool_call(tool="post", args=args)
    assert sum(len(reason.message) for reason in call.reasons) < 2_000


async def test_flaw_a_per_tool_cap_of_zero_blocks_every_tool(open_engine):
    engine = await open_engine(guards=GuardConfig(default_tool_cap=0, tool_caps={"send": 0}))
    await engine.session(NS, "s").ingest(messages=[user("Send the notes.")])
    results = [
        await engine.session(NS, "s").check_tool_call(tool=tool, args={"part": f"p{i}"})
        for tool in ("send", "archive")
        for i in range(3)
    ]
    assert {result.verdict.value for result in results} == {"allow"}


async def test_flaw_literals_checked_only_at_the_top_level(engine):
    await engine.session(NS, "s").ingest(messages=[user("Order the usual.")])
    args = {"order": {"lines": [{"sku": "tea", "qty": 12}, {"sku": "mugs", "price": "8.50"}]}}
    result = await engine.session(NS, "s").check_ungrounded(args=args)
    assert [item.path for item in result.ungrounded] == ["order.lines[0].qty", "order.lines[1].price"]


async def test_flaw_success_argument_hints_are_never_filled(engine):
    for city in ("Oslo", "Oslo", "Bergen"):
        call = ToolOutcome(
            tool="weather", args={"city": city, "units": "metric"}, outcome=Outcome.SUCCESS, goal="pack"
        )
        await engine.session(NS, "s").record_tool_outcome(call=call)
    (weather,) = (await engine.namespace(NS).procedural_knowledge(tools=["weather"], goal="pack")).tools
    hints = {(hint.arg, hint.value): hint.count for hint in weather.success_hints}
    assert hints == {("units", "metric"): 3, ("city", "Oslo"): 2, ("city", "Bergen"): 1}
