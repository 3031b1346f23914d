"""--max-namespace-mb: a namespace past its share of page text is refused writes with a sentence,
while every other namespace writes on; forgetting frees its room. On both backends."""

import pytest
from memvm.engine.errors import NamespaceFull
from memvm.engine.models.procedures import Outcome, ToolOutcome

from tests.conftest import db_rows, note, user

pytestmark = pytest.mark.anyio

# 250,000 characters a page: five of them pass a 1 MB quota.
PAGE = "the orchard gate opens at dawn " * 8_064


async def test_a_namespace_past_its_quota_is_refused_and_the_others_write_on(open_engine):
    engine = await open_engine(max_namespace_mb=1)
    pages = [await engine.session("greedy", "s").remember(page=note(f"{i} {PAGE}")) for i in range(5)]
    with pytest.raises(NamespaceFull, match=r"size limit \(1 MB of text\), so nothing was saved"):
        await engine.session("greedy", "s").remember(page=note("one more"))
    with pytest.raises(NamespaceFull):
        await engine.session("greedy", "s").ingest(messages=[user("and a message")])
    # Another tenant is not touched by the first one's share.
    other = await engine.session("modest", "s").remember(page=note("a small note"))
    assert other.created
    # A removal is never refused, and frees room for the next write.
    await engine.session("greedy", "s").forget(page_id=pages[0].page_id)
    await engine.session("greedy", "s").forget(page_id=pages[1].page_id)
    again = await engine.session("greedy", "s").remember(page=note("fits again"))
    assert again.created


async def test_without_a_quota_a_namespace_is_bounded_by_nothing_but_the_file(open_engine):
    engine = await open_engine()
    for i in range(5):
        await engine.session("greedy", "s").remember(page=note(f"{i} {PAGE}"))
    assert (await engine.session("greedy", "s").remember(page=note("one more"))).created


async def test_values_bound_and_calls_recorded_count_against_the_quota_as_pages_do(open_engine, db_url):
    engine = await open_engine(max_namespace_mb=1)
    value = "a long listing " * 30_000  # 450,000 characters
    for i in range(2):
        await engine.session("greedy", "s").bind_value(tool="read", args={"i": i}, value=value)
    call = ToolOutcome(tool="upload", args={"body": "b" * 200_000}, outcome=Outcome.SUCCESS)
    await engine.session("greedy", "s").record_tool_outcome(call=call)
    kept = db_rows(db_url, "SELECT chars, log_chars FROM page_counts WHERE namespace = 'greedy'")
    assert kept[0][0] < 1_000 and kept[0][1] > 1_000_000  # no page text to speak of: the logs filled it
    with pytest.raises(
        NamespaceFull, match="most of it is bound values, recorded tool calls and earlier versions"
    ):
        await engine.session("greedy", "s").bind_value(tool="read", args={"i": 3}, value="1")
    with pytest.raises(NamespaceFull):
        await engine.session("greedy", "s").record_tool_outcome(call=call)
    assert (await engine.session("modest", "s").bind_value(tool="read", args={}, value=value)).ref


async def test_earlier_versions_of_a_note_count_and_forgetting_it_frees_them(open_engine, db_url):
    engine = await open_engine(max_namespace_mb=1)
    for i in range(5):  # the note stays 250,000 characters; its four earlier versions are kept
        await engine.session("greedy", "s").remember(page=note(f"{i} {PAGE}"), key="plan")
    with pytest.raises(NamespaceFull, match="earlier versions of notes: forget notes you no longer need"):
        await engine.session("greedy", "s").remember(page=note("one more"))
    await engine.session("greedy", "s").forget(page_id="plan")
    assert db_rows(db_url, "SELECT chars, log_chars FROM page_counts WHERE namespace = 'greedy'") == [(0, 0)]
    assert (await engine.session("greedy", "s").remember(page=note("fits again"))).created
