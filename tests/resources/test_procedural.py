import pytest
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.resources.procedural import CLOSE, NOTHING_YET, OPEN, render_hints

from tests.conftest import NS

pytestmark = pytest.mark.anyio


async def busy_history(engine):
    for tool in ("book", "search", "pay", "mail", "geo"):
        for index in range(6):
            message = (
                f"{tool} failed: code {index} for item 'x{index}' because the upstream service rejected it"
            )
            await engine.session(NS, "s").record_tool_outcome(
                call=ToolOutcome(
                    tool=tool,
                    args={"n": index},
                    outcome=Outcome.FAILURE,
                    error_type=f"E{index % 3}",
                    error_message=message,
                )
            )
            await engine.session(NS, "s").record_tool_outcome(
                call=ToolOutcome(
                    tool=tool, args={"n": index, "fixed": True, "note": "x" * 50}, outcome=Outcome.SUCCESS
                )
            )


@pytest.mark.parametrize("max_tokens", [30, 45, 80, 150, 300, 600, 2000])
async def test_the_block_never_exceeds_its_token_cap(engine, max_tokens):
    await busy_history(engine)
    knowledge = await engine.namespace(NS).procedural_knowledge(error_type="E1")
    hints = render_hints(knowledge, engine.counter, max_tokens)
    assert hints.tokens == engine.counter.count(hints.text) <= max_tokens
    assert hints.text.startswith(OPEN) and hints.text.endswith(CLOSE)


async def test_a_generous_cap_keeps_every_fact_with_its_calls_and_dates(engine):
    await busy_history(engine)
    knowledge = await engine.namespace(NS).procedural_knowledge(tools=["book"], error_type="E1")
    text = render_hints(knowledge, engine.counter, 4000).text
    assert text.splitlines()[1].startswith('Earlier fix for "E1": book call ')
    assert "book: 12 recorded calls, 50% succeeded; last 20" in text
    assert "fixed 2x, last by call" in text and "added fixed=true" in text


async def test_with_nothing_recorded_the_block_says_so(engine):
    hints = render_hints(await engine.namespace(NS).procedural_knowledge(), engine.counter, 600)
    assert hints.text == f"{OPEN}\n{NOTHING_YET}\n{CLOSE}"
