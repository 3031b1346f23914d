import json

import pytest
from memvm.engine import Engine
from memvm.engine.config import EngineConfig
from memvm.engine.models.pages import Level
from memvm.resources.budget import with_reserve
from memvm.resources.context import render_developer_message
from memvm.resources.manifest import render_manifest
from memvm.resources.rules import RuleMode, rules_text

from tests.conftest import NS, assistant, long_text, note, user

pytestmark = pytest.mark.anyio


@pytest.fixture
async def budgeted(db_path, clock):
    engine = await Engine.open(db_path, with_reserve(EngineConfig(budget_tokens=4_000)), clock=clock)
    yield engine
    await engine.close()


async def test_the_whole_developer_message_stays_within_the_budget(budgeted):
    engine = budgeted
    for i in range(60):
        await engine.session(NS, "s").ingest(
            messages=[user(long_text(f"q{i}", 3)), assistant(long_text(f"a{i}", 4))]
        )
        await engine.session(NS, "s").remember(page=note(long_text(f"n{i}", 5)))
    for mode in RuleMode:
        message = await render_developer_message(engine.session(NS, "s"), mode=mode)
        assert message.tokens == engine.counter.count(message.text)
        assert message.tokens <= engine.config.budget_tokens
    strict = await render_developer_message(engine.session(NS, "s"), mode=RuleMode.STRICT)
    # The budget was really used, not left empty by an over-cautious reserve.
    assert strict.tokens > engine.config.budget_tokens * 0.5


async def test_the_manifest_is_capped_in_tokens_and_counts_what_it_left_out(db_path, clock):
    config = with_reserve(EngineConfig(manifest_max_tokens=300, manifest_max_pages=200))
    engine = await Engine.open(db_path, config, clock=clock)
    try:
        for i in range(150):
            await engine.session(NS, "s").remember(page=note(f"fact number {i} about the orchard"))
        text = await render_manifest(engine.session(NS, "s"))
        manifest = json.loads(text)
        assert engine.counter.count(text) <= 300
        assert manifest["counts"]["pages"] == 150
        assert manifest["counts"]["omitted_available"] > 0
        assert manifest["counts"]["listed"] == len(manifest["available_pages"]) > 0
    finally:
        await engine.close()


async def test_manifest_and_rules_state_the_same_fault_limit(db_path, clock):
    engine = await Engine.open(db_path, with_reserve(EngineConfig(max_faults_per_turn=7)), clock=clock)
    try:
        manifest = json.loads(await render_manifest(engine.session(NS, "s")))
        assert manifest["policies"]["max_faults_per_turn"] == 7
        assert manifest["policies"]["prefer_levels"] == [2, 1, 0]
        for mode in (RuleMode.STRICT, RuleMode.RELAXED):
            assert "at most 7 pages per turn" in rules_text(mode, max_faults_per_turn=7)
    finally:
        await engine.close()


async def test_manifest_lists_the_working_set_and_unmapped_pages_with_hints(budgeted):
    engine = budgeted
    a = await engine.session(NS, "s").remember(page=note(long_text("cellar", 4), importance=0.9))
    b = await engine.session(NS, "s").remember(page=note("attic has the winter tyres"))
    await engine.session(NS, "s").page_fault(page_id=b.page_id, target_level=Level.FULL)
    manifest = json.loads(await render_manifest(engine.session(NS, "s")))
    assert manifest["working_set"] == [
        {"page_id": b.page_id, "level": 0, "tokens": manifest["working_set"][0]["tokens"]}
    ]
    listed = {p["page_id"]: p for p in manifest["available_pages"]}
    assert set(listed) == {a.page_id}
    assert listed[a.page_id]["hint"].startswith("[note]")
    assert listed[a.page_id]["tokens"] == a.tokens


async def test_passive_mode_sends_the_context_alone_and_keeps_roles(budgeted):
    engine = budgeted
    await engine.session(NS, "s").ingest(messages=[user("Where is the key?"), assistant("Under the mat.")])
    passive = await render_developer_message(engine.session(NS, "s"), mode=RuleMode.PASSIVE)
    assert (
        passive.text
        == "<VM:CONTEXT>\nU msg_000001: Where is the key?\nA msg_000002: Under the mat.\n</VM:CONTEXT>"
    )
    strict = await render_developer_message(
        engine.session(NS, "s"), mode=RuleMode.STRICT, system_prompt="You are helpful."
    )
    assert strict.text.startswith("You are helpful.\n\n<VM:RULES")
    assert "<VM:MANIFEST_JSON>" in strict.text and strict.text.endswith("</VM:CONTEXT>")


def test_rules_cover_recall_evidence_levels_citation_and_discretion():
    text = rules_text(RuleMode.STRICT, max_faults_per_turn=3)
    for phrase in (
        "search_pages",
        "page_fault",
        "map, not evidence",
        "target_level 2",
        "Cite the page ids",
        "Never mention",
        "not instructions",
    ):
        assert phrase in text
    assert "page_fault" not in rules_text(RuleMode.PASSIVE, max_faults_per_turn=3)


async def test_a_pinned_page_stays_in_a_manifest_that_is_cut_to_its_cap(engine: Engine):
    await engine.session(NS, "curator").remember(page=note("The release freeze starts Friday."), key="freeze")
    for i in range(120):  # far more loaded entries than the manifest's cap lists
        await engine.session(NS, "agent").ingest(messages=[user(f"chatter number {i} about lunch")])
    await engine.session(NS, "curator").pin_page(page_id="freeze", pinned=True, place=False)
    manifest = json.loads(await render_manifest(engine.session(NS, "agent")))
    assert manifest["counts"]["omitted_working_set"] > 0  # the cap was reached
    assert [p["page_id"] for p in manifest["available_pages"]][:1] == ["freeze"]
    assert manifest["available_pages"][0]["pinned"] is True
