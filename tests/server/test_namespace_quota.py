"""What a model is told when its namespace is at `--max-namespace-mb`: one sentence, as a tool error."""

import pytest
from memvm.engine import EngineConfig
from memvm.server.settings import ToolProfile

from tests.server.conftest import call, call_error

pytestmark = pytest.mark.anyio

PAGE = "the orchard gate opens at dawn " * 8_064  # 250,000 characters


async def test_a_namespace_at_its_quota_gets_one_sentence_saying_to_forget(connect):
    async with connect(tools=ToolProfile.MODEL, engine=EngineConfig(max_namespace_mb=1)) as client:
        for i in range(5):
            await call(client, "remember", content=f"{i} {PAGE}")
        said = await call_error(client, "remember", content="one more")
    assert said == (
        "This memory is at its size limit (1 MB of text), so nothing was saved; forget pages you no "
        "longer need, then retry."
    )
