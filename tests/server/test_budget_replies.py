"""What a fault reply may put into the model's context, and the budget figures it and the manifest show."""

import json
import random

import pytest
from memvm.engine.config import EngineConfig
from memvm.engine.paging.tokens import TokenCounter

from tests.server.conftest import call, read

pytestmark = pytest.mark.anyio

COUNTER = TokenCounter("o200k_base")


def tool_message(chars: int) -> str:
    """A long, varied tool log: about four characters a token, like real output."""
    rng = random.Random(5)
    words = ["status", "ok", "retry", "latency", "node", "shard", "timeout", "rebalanced", "bytes"]
    lines = []
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(f"{rng.randrange(10**6):06d} {' '.join(rng.choice(words) for _ in range(8))}")
    return "\n".join(lines)[:chars]


async def test_a_fault_never_replies_with_more_than_the_working_set_could_hold(connect, report_figure):
    async with connect() as client:
        stored = await call(client, "ingest", messages=[{"role": "tool", "content": tool_message(500_000)}])
        page_id = stored["page_ids"][0]
        result = await client.call_tool("page_fault", {"page_id": page_id, "target_level": 0})
    assert not result.is_error
    reply = result.structured_content
    text = result.content[0].text
    sent = COUNTER.count(text)
    assert reply["requested_level"] == 0 and reply["level"] > 0 and reply["mapped"] is True
    assert reply["tokens"] <= reply["page_budget_tokens"]
    assert sent <= reply["budget_tokens"]
    assert "instead" in reply["reason"]
    report_figure(
        f"fault_reply: page_chars=500000 asked=0 level={reply['level']} content_tokens={reply['tokens']} "
        f"reply_tokens={sent} reply_bytes={len(text.encode()) + len(json.dumps(reply).encode())} "
        f"budget={reply['budget_tokens']}"
    )


async def test_the_manifest_and_a_fault_show_the_reserve_and_the_page_budget(connect):
    async with connect(engine=EngineConfig(budget_tokens=2_000)) as client:
        note = await call(client, "remember", content="The gate code is 4411.")
        fault = await call(client, "page_fault", page_id=note["page_id"])
        manifest = json.loads(await read(client, "memvm://current/manifest"))
    policies = manifest["policies"]
    assert policies["reserved_tokens"] + policies["page_budget_tokens"] == policies["budget_tokens"] == 2_000
    assert 0 < policies["page_budget_tokens"] < 2_000
    assert fault["reserved_tokens"] == policies["reserved_tokens"]
    assert fault["page_budget_tokens"] == policies["page_budget_tokens"]
    assert policies["reserved_tokens"] < fault["working_set_tokens"] <= 2_000
