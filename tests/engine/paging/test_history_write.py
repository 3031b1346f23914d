"""Past conversations written as history: dated as written, mapped nowhere, each message once."""

import pytest
from memvm.engine.errors import InvalidArgument
from memvm.engine.models.pages import PageType, Role
from memvm.engine.paging.history_write import BATCH_PAGES, HistoryMessage

from tests.conftest import NS, db_rows

pytestmark = pytest.mark.anyio

MAY_1 = 1_714_560_000.0


def said(source_id: str, role: Role, content: str, at: float) -> HistoryMessage:
    return HistoryMessage(role=role, content=content, created_at=at, source_id=source_id)


CONVERSATION = [
    said("m1", Role.USER, "Which ferry goes from Split to Hvar in the morning?", MAY_1),
    said("m2", Role.ASSISTANT, "The Jadrolinija catamaran leaves Split at 7:30.", MAY_1 + 40),
]


async def write(engine, messages, session="chat-1"):
    return await engine.session(NS, session).write_history(
        source="test", title="Croatia trip", messages=messages
    )


async def test_history_pages_keep_their_dates_roles_and_order(engine, clock):
    written = await write(engine, CONVERSATION)
    assert written.already_there == 0 and len(written.page_ids) == 2
    pages = [await engine.namespace(NS).get_page(page_id=page_id) for page_id in written.page_ids]
    assert [(p.role, p.created_at, p.type) for p in pages] == [
        (Role.USER, MAY_1, PageType.TRANSCRIPT),
        (Role.ASSISTANT, MAY_1 + 40, PageType.TRANSCRIPT),
    ]
    assert clock.now() != MAY_1  # the dates are the messages', not the clock's
    assert pages[0].metadata == {"source": "test", "source_id": "m1", "conversation": "Croatia trip"}


async def test_history_is_searchable_and_mapped_into_no_working_set(engine):
    written = await write(engine, CONVERSATION)
    found = await engine.session(NS, "elsewhere").search(query="catamaran Split")
    assert found.results[0].page_id == written.page_ids[1]
    assert (await engine.session(NS, "chat-1").working_set()).entries == []


async def test_writing_the_same_messages_again_adds_nothing(engine):
    await write(engine, CONVERSATION)
    again = await write(engine, CONVERSATION)
    assert again.page_ids == [] and again.already_there == 2
    assert (await engine.session(NS, "s").search(query="ferry")).total_pages == 2


async def test_a_conversation_that_grew_adds_only_its_new_message(engine):
    await write(engine, CONVERSATION)
    grown = await write(
        engine, [*CONVERSATION, said("m3", Role.USER, "And back in the evening?", MAY_1 + 600)]
    )
    assert len(grown.page_ids) == 1 and grown.already_there == 2
    page = await engine.namespace(NS).get_page(page_id=grown.page_ids[0])
    assert page.content(0) == "And back in the evening?" and page.created_at == MAY_1 + 600


async def test_the_same_source_id_in_another_session_is_another_message(engine):
    await write(engine, CONVERSATION)
    other = await write(engine, CONVERSATION, session="chat-2")
    assert len(other.page_ids) == 2


async def test_secrets_in_history_are_redacted_before_they_are_stored(engine):
    key = "sk-ant-api03-" + "A" * 40
    written = await write(engine, [said("m9", Role.USER, f"my key is {key}", MAY_1)])
    page = await engine.namespace(NS).get_page(page_id=written.page_ids[0])
    assert page.content(0) == "my key is [REDACTED:anthropic_key]"
    assert all(key not in text for text in page.levels)


@pytest.mark.parametrize("at", [float("inf"), float("-inf"), float("nan")])
async def test_a_message_dated_at_no_time_is_refused_and_nothing_written(engine, db_url, at):
    with pytest.raises(InvalidArgument, match="which is not a time"):
        await write(engine, [*CONVERSATION, said("m3", Role.USER, "when?", at)])
    assert db_rows(db_url, "SELECT count(*) FROM pages") == [(0,)]


async def test_a_long_conversation_is_written_in_bounded_transactions_and_a_rerun_completes_it(
    engine, monkeypatch
):
    messages = [
        said(f"m{n}", Role.USER, f"message number {n}", MAY_1 + n) for n in range(BATCH_PAGES * 2 + 1)
    ]
    transactions = 0
    write_transaction = engine.db.write

    def counted(*args, **kwargs):
        nonlocal transactions
        transactions += 1
        return write_transaction(*args, **kwargs)

    monkeypatch.setattr(engine.db, "write", counted)
    # A run stopped after its first batch: the next writes the rest, and only the rest.
    first = await write(engine, messages[:BATCH_PAGES])
    assert transactions == 1 and len(first.page_ids) == BATCH_PAGES
    rest = await write(engine, messages)
    assert transactions == 1 + 2  # 501 new pages: a server waits for one batch at a time
    assert (len(rest.page_ids), rest.already_there) == (BATCH_PAGES + 1, BATCH_PAGES)
