import sqlite3

import pytest
from memvm.engine import EngineConfig
from memvm.engine.errors import InvalidArgument, KeyConflict, PageChanged, PageNotFound, PageTooLong
from memvm.engine.models.pages import Level, NewPage, PageType, Role
from memvm.engine.models.procedures import Outcome, ToolOutcome
from memvm.engine.models.writes import IngestMessage
from memvm.engine.paging.history_write import HistoryMessage
from memvm.engine.paging.memory import MAX_CHARS_PER_TOKEN, fingerprint
from memvm.engine.paging.tokens import TokenCounter

from tests.conftest import NS, note, user

pytestmark = pytest.mark.anyio


async def test_remember_upserts_by_key(engine):
    first = await engine.session(NS, "s").remember(page=note("Prefers tea"), key="drink")
    second = await engine.session(NS, "s").remember(
        page=note("Prefers green tea, no sugar", type=PageType.PREFERENCE), key="drink"
    )
    assert first.created and not second.created
    assert first.page_id == second.page_id == "drink"
    page = await engine.namespace(NS).get_page(page_id="drink")
    assert page.levels[0] == "Prefers green tea, no sugar" and page.type is PageType.PREFERENCE
    found = await engine.session(NS, "s").search(query="green tea")
    assert [r.page_id for r in found.results] == ["drink"]
    assert (await engine.session(NS, "s").search(query="prefers")).total_pages == 1


async def test_rewriting_a_mapped_page_takes_its_stale_line_out_of_context(engine):
    await engine.session(NS, "s").remember(page=note("Old address: 1 Elm St"), key="address")
    await engine.session(NS, "s").page_fault(page_id="address", target_level=Level.FULL)
    await engine.session(NS, "s").remember(page=note("New address: 9 Oak Ave"), key="address")
    view = await engine.session(NS, "s").working_set()
    assert all("Elm" not in entry.line for entry in view.entries)


async def test_remember_cannot_overwrite_a_transcript_page(engine):
    ingested = await engine.session(NS, "s").ingest(messages=[user("my words")])
    with pytest.raises(KeyConflict, match="choose another key"):
        await engine.session(NS, "s").remember(page=note("forged"), key=ingested.page_ids[0])
    assert (await engine.namespace(NS).get_page(page_id=ingested.page_ids[0])).levels[0] == "my words"


async def test_generated_ids_skip_a_key_that_took_their_name(engine):
    await engine.session(NS, "s").remember(page=note("taken by key"), key="note_000001")
    generated = await engine.session(NS, "s").remember(page=note("generated"))
    assert generated.page_id == "note_000002"


async def test_forget_removes_the_page_from_storage_search_and_working_sets(engine):
    stored = await engine.session(NS, "s").remember(page=note("temporary secret code 4471"))
    await engine.session(NS, "s").page_fault(page_id=stored.page_id)
    result = await engine.session(NS, "s").forget(page_id=stored.page_id)
    assert result.deleted
    assert (await engine.session(NS, "s").search(query="secret code")).results == []
    assert (await engine.session(NS, "s").working_set()).entries == []
    with pytest.raises(PageNotFound):
        await engine.namespace(NS).get_page(page_id=stored.page_id)


async def test_ingest_keeps_roles_and_names(engine):
    from memvm.engine.models.pages import Role
    from memvm.engine.models.writes import IngestMessage

    result = await engine.session(NS, "s").ingest(
        messages=[
            IngestMessage(role=Role.USER, content="What's the weather?", name="Caroline"),
            IngestMessage(role=Role.TOOL, content="14°C and rain", name="weather"),
            IngestMessage(role=Role.ASSISTANT, content="It is 14°C and raining."),
        ]
    )
    pages = [await engine.namespace(NS).get_page(page_id=pid) for pid in result.page_ids]
    assert [p.role for p in pages] == [Role.USER, Role.TOOL, Role.ASSISTANT]
    assert pages[0].metadata == {"name": "Caroline"}
    assert pages[1].provenance == "tool:weather"
    lines = [e.line[:2] for e in (await engine.session(NS, "s").working_set()).entries]
    assert lines == ["U ", "T ", "A "]


@pytest.mark.sqlite_only
async def test_page_counts_follow_writes_and_forgets_and_are_rebuilt_for_older_files(open_engine, db_path):
    engine = await open_engine()
    for i in range(5):
        await engine.session(NS, "s").remember(page=note(f"orchard fact {i}"))
    await engine.session("other", "s").ingest(messages=[user("hello from another tenant")])
    await engine.session(NS, "s").forget(
        page_id=(await engine.session(NS, "s").search(query="orchard")).results[0].page_id
    )
    assert (await engine.session(NS, "s").memory_map()).counts["pages"] == 4
    assert (await engine.session("other", "s").search(query="hello")).total_pages == 1
    await engine.close()
    # A file from before the counts were kept: the migration counts what is there.
    with sqlite3.connect(db_path) as conn:
        conn.executescript(
            "DROP TRIGGER pages_count_insert; DROP TRIGGER pages_count_delete; DROP INDEX pages_pinned;"
            "DROP TABLE page_counts; DELETE FROM schema_migrations WHERE version = 4;"
        )
    reopened = await open_engine()
    assert (await reopened.session(NS, "s").memory_map()).counts["pages"] == 4
    assert (await reopened.session("other", "s").memory_map()).counts["pages"] == 1


async def test_a_pinned_page_is_offered_in_every_manifest_however_long_ago_it_was_used(engine):
    note = NewPage(content="The deploy freeze starts Friday.", type=PageType.NOTE, provenance="user")
    await engine.session(NS, "curator").remember(page=note, key="freeze")
    filler = [IngestMessage(role=Role.USER, content=f"chatter {i}") for i in range(600)]
    await engine.session(NS, "other").ingest(messages=filler)
    before = await engine.session(NS, "agent").memory_map()
    assert "freeze" not in [p.page_id for p in before.available]  # 600 newer pages push it out
    state = await engine.session(NS, "curator").pin_page(page_id="freeze", pinned=True, place=False)
    assert state.pinned and not state.mapped  # a curator's pin maps it nowhere
    after = await engine.session(NS, "agent").memory_map()
    assert after.available[0].page_id == "freeze" and after.available[0].pinned


async def test_a_rewrite_based_on_old_text_is_refused_and_changes_nothing(engine):
    first = NewPage(content="Deploys go through argo.", type=PageType.NOTE, provenance="user")
    await engine.session(NS, "s").remember(page=first, key="deploy")
    read = fingerprint("Deploys go through argo.")
    agent = NewPage(content="Deploys go through flux.", type=PageType.NOTE, provenance="model")
    await engine.session(NS, "s").remember(page=agent, key="deploy")
    curator = NewPage(content="Deploys go through argo, always.", type=PageType.NOTE, provenance="user")
    with pytest.raises(PageChanged, match="changed since it was read"):
        await engine.session(NS, "ui").remember(page=curator, key="deploy", unless_changed_from=read)
    assert (await engine.namespace(NS).get_page(page_id="deploy")).levels[0] == "Deploys go through flux."
    now = fingerprint("Deploys go through flux.")
    await engine.session(NS, "ui").remember(page=curator, key="deploy", unless_changed_from=now)
    assert (await engine.namespace(NS).get_page(page_id="deploy")).levels[
        0
    ] == "Deploys go through argo, always."


async def test_the_same_text_remembered_again_without_a_key_is_the_page_already_holding_it(engine, clock):
    first = await engine.session(NS, "s1").remember(page=note("We adopted a beagle called Miso."))
    again = await engine.session(NS, "s2").remember(page=note("We adopted a beagle called Miso."))
    assert (again.page_id, again.created, again.version) == (first.page_id, False, 1)
    found = await engine.session(NS, "s1").search(query="beagle")
    assert [hit.page_id for hit in found.results] == [first.page_id] and found.total_pages == 1

    # Another type, or other text, is another page; so is the text once its page has expired.
    claim = await engine.session(NS, "s1").remember(
        page=note("We adopted a beagle called Miso.", type=PageType.CLAIM)
    )
    brief = await engine.session(NS, "s1").remember(page=note("Parked on level 3."), ttl_seconds=60)
    clock.advance(120)
    later = await engine.session(NS, "s1").remember(page=note("Parked on level 3."))
    assert claim.created and later.created and later.page_id != brief.page_id


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text the token counter is asked to split, from now on."""
    lengths: list[int] = []
    encoded = TokenCounter._encoded

    def spy(self: TokenCounter, text: str) -> list[int]:
        lengths.append(len(text))
        return encoded(self, text)

    monkeypatch.setattr(TokenCounter, "_encoded", spy)
    return lengths


async def test_a_text_longer_than_any_page_is_refused_by_its_length_without_being_counted(
    open_engine, counted
):
    engine = await open_engine(EngineConfig(max_page_tokens=1_000))
    limit = 1_000 * MAX_CHARS_PER_TOKEN
    huge = "the quarterly report " * (limit // 21 + 1)
    refusal = f"The content is {len(huge)} characters, over the {limit}-character page limit; split it"
    with pytest.raises(PageTooLong, match=refusal):
        await engine.session(NS, "s").remember(page=note(huge))
    with pytest.raises(PageTooLong, match=refusal):
        await engine.session(NS, "s").ingest(messages=[user("hello"), user(huge)])
    with pytest.raises(PageTooLong, match=refusal):
        await engine.session(NS, "h").write_history(
            source="chat",
            title=None,
            messages=[HistoryMessage(role=Role.USER, content=huge, created_at=1.0, source_id="m1")],
        )
    with pytest.raises(PageTooLong, match=refusal):
        failed = ToolOutcome(tool="cat", args={}, outcome=Outcome.SUCCESS, result=huge)
        await engine.session(NS, "s").record_tool_outcome(call=failed)
    assert [length for length in counted if length >= limit] == []
    assert (await engine.session(NS, "s").session_state()).turn == 0  # the hello was not kept either


async def test_a_text_under_the_length_bound_but_over_the_token_limit_is_refused_before_its_levels(
    open_engine, counted
):
    engine = await open_engine(EngineConfig(max_page_tokens=1_000))
    text = " ".join(["word"] * 1_500)  # 7,499 characters, 1,500 tokens
    with pytest.raises(PageTooLong, match="The content is 1500 tokens, over the 1000-token page limit"):
        await engine.session(NS, "s").remember(page=note(text))
    # Counted once, whole; the reduced, abstract and reference levels were never made.
    assert [length for length in counted if length > 100] == [len(text)]


async def test_a_blank_run_too_long_for_the_tokenizer_is_refused_in_one_sentence(engine):
    with pytest.raises(InvalidArgument, match="a run of blank characters too long to count; shorten"):
        await engine.session(NS, "s").remember(page=note("x" + " " * 1_000_000 + "y"))
