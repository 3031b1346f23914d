"""One test per flaw measured in chuk-ai-session-manager 0.11.2, showing memvm does not have it.

The flaws of its guards and procedural memory (ungrounded warnings that list every binding, a
per-tool cap of 0 that blocks everything, literals checked only at the top level, success hints
never filled) belong to those capabilities and are tested with them.
"""

import gc
import tracemalloc

import pytest
from memvm.engine import Engine, EngineConfig
from memvm.engine.models import IngestMessage, Level, Role
from memvm.resources.budget import with_reserve
from memvm.resources.context import render_developer_message
from memvm.resources.rules import RuleMode

from tests.conftest import NS, assistant, long_text, note, user

pytestmark = pytest.mark.anyio


async def test_flaw_everything_lost_on_restart(db_path, clock):
    engine = await Engine.open(db_path, clock=clock)
    stored = await engine.remember(namespace=NS, session="s", page=note("durable fact about otters"))
    await engine.close()
    reopened = await Engine.open(db_path, clock=clock)
    try:
        found = await reopened.search(namespace=NS, session="s", query="otters")
        assert [hit.page_id for hit in found.results] == [stored.page_id]
    finally:
        await reopened.close()


async def test_flaw_target_level_has_no_effect(engine):
    stored = await engine.remember(namespace=NS, session="s", page=note(long_text("ferry", 16)))
    abstract = await engine.page_fault(
        namespace=NS, session="s", page_id=stored.page_id, target_level=Level.ABSTRACT
    )
    await engine.begin_turn(namespace=NS, session="s")
    full = await engine.page_fault(namespace=NS, session="s", page_id=stored.page_id, target_level=Level.FULL)
    assert abstract.tokens <= 48 < full.tokens
    assert abstract.content != full.content


async def test_flaw_refault_charged_again_and_counted_twice(engine):
    stored = await engine.remember(namespace=NS, session="s", page=note(long_text("canal", 4)))
    first = await engine.page_fault(
        namespace=NS, session="s", page_id=stored.page_id, target_level=Level.FULL
    )
    second = await engine.page_fault(
        namespace=NS, session="s", page_id=stored.page_id, target_level=Level.FULL
    )
    assert second.faults_left == first.faults_left
    assert second.working_set_tokens == first.working_set_tokens


async def test_flaw_fault_reports_success_when_the_page_could_not_be_mapped(open_engine):
    engine = await open_engine(budget_tokens=1_000, reserved_tokens=950)
    stored = await engine.remember(namespace=NS, session="s", page=note(long_text("dam", 20)))
    result = await engine.page_fault(
        namespace=NS, session="s", page_id=stored.page_id, target_level=Level.FULL
    )
    assert result.mapped is False and result.reason
    assert (await engine.working_set(namespace=NS, session="s")).entries == []


async def test_flaw_search_stops_at_the_first_limit_hits_before_sorting(engine):
    for i in range(40):
        await engine.remember(
            namespace=NS, session="s", page=note(f"Item {i}: a passing word about volcanoes.")
        )
    best = await engine.remember(
        namespace=NS,
        session="s",
        page=note("Volcanoes: volcanoes erupt; volcanoes of Iceland; volcano tours."),
    )
    result = await engine.search(namespace=NS, session="s", query="volcanoes", limit=3)
    assert result.results[0].page_id == best.page_id


async def test_flaw_budget_ignores_manifest_and_rules_and_the_prompt_grows_without_bound(db_path, clock):
    engine = await Engine.open(db_path, with_reserve(EngineConfig(budget_tokens=3_000)), clock=clock)
    try:
        batch = [IngestMessage(role=Role.USER, content=long_text(f"subject{i}", 2)) for i in range(400)]
        await engine.ingest(namespace=NS, session="s", messages=batch)
        message = await render_developer_message(engine, namespace=NS, session="s", mode=RuleMode.STRICT)
        assert message.tokens <= 3_000
        assert len(message.text) < 3_000 * 8
    finally:
        await engine.close()


async def test_flaw_every_transcript_line_rendered_as_the_user(engine):
    await engine.ingest(
        namespace=NS, session="s", messages=[user("Is it raining?"), assistant("Yes, since noon.")]
    )
    lines = [entry.line for entry in (await engine.working_set(namespace=NS, session="s")).entries]
    assert lines == ["U msg_000001: Is it raining?", "A msg_000002: Yes, since noon."]


async def test_flaw_memory_grows_with_pages_and_eviction_frees_none(open_engine):
    engine = await open_engine(budget_tokens=2_000)
    text = long_text("gravel", 3)

    async def add(count: int, start: int) -> None:
        for offset in range(0, count, 100):
            batch = [
                IngestMessage(role=Role.ASSISTANT, content=f"{start + offset + i} {text}") for i in range(100)
            ]
            await engine.ingest(namespace=NS, session="s", messages=batch)

    await add(200, 0)  # warm caches and statements first
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await add(1_000, 200)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert (await engine.counts(namespace=NS, session="s"))["pages"] == 1_200
    # The predecessor held ~5 KB per page in RAM (5 MB here); memvm's pages live on disk.
    assert grown < 512 * 1024
