"""--max-namespace-mb: a namespace past its share of page text is refused writes with a sentence,
while every other namespace writes on; forgetting frees its room. On both backends."""

import pytest
from memvm.engine.errors import NamespaceFull

from tests.conftest import note, user

pytestmark = pytest.mark.anyio

# 250,000 characters a page: five of them pass a 1 MB quota.
PAGE = "the orchard gate opens at dawn " * 8_064


async def test_a_namespace_past_its_quota_is_refused_and_the_others_write_on(open_engine):
    engine = await open_engine(max_namespace_mb=1)
    pages = [
        await engine.remember(namespace="greedy", session="s", page=note(f"{i} {PAGE}")) for i in range(5)
    ]
    with pytest.raises(NamespaceFull, match=r"size limit \(1 MB of text\), so nothing was saved"):
        await engine.remember(namespace="greedy", session="s", page=note("one more"))
    with pytest.raises(NamespaceFull):
        await engine.ingest(namespace="greedy", session="s", messages=[user("and a message")])
    # Another tenant is not touched by the first one's share.
    other = await engine.remember(namespace="modest", session="s", page=note("a small note"))
    assert other.created
    # A removal is never refused, and frees room for the next write.
    await engine.forget(namespace="greedy", session="s", page_id=pages[0].page_id)
    await engine.forget(namespace="greedy", session="s", page_id=pages[1].page_id)
    again = await engine.remember(namespace="greedy", session="s", page=note("fits again"))
    assert again.created


async def test_without_a_quota_a_namespace_is_bounded_by_nothing_but_the_file(open_engine):
    engine = await open_engine()
    for i in range(5):
        await engine.remember(namespace="greedy", session="s", page=note(f"{i} {PAGE}"))
    assert (await engine.remember(namespace="greedy", session="s", page=note("one more"))).created
