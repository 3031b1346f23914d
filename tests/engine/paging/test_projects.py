"""Memory per project: a page written in one work tree is not read in another; the user's own
notes are read in every one; a reader with no project reads all, told where each page came from."""

import pytest
from memvm.engine.errors import KeyInOtherProject, PageNotFound
from memvm.engine.models.pages import PageType
from memvm.engine.paging.projects import project_session, work_tree

from tests.conftest import NS, note, user

pytestmark = pytest.mark.anyio

BILLING = "/home/ana/src/billing"
WEBSITE = "/home/ana/src/website"


async def _found(engine, query: str, project: str | None) -> dict[str, str | None]:
    result = await engine.session(NS, "s", project=project).search(query=query, limit=10)
    return {hit.page_id: hit.project for hit in result.results}


async def test_a_projects_page_is_found_there_and_not_in_another_project(engine):
    deploy = await engine.session(NS, "s", project=BILLING).remember(
        page=note("deploy billing with fly deploy --app bill")
    )
    assert deploy.page_id in await _found(engine, "how do I deploy", BILLING)
    assert await _found(engine, "how do I deploy", WEBSITE) == {}


async def test_a_reader_with_no_project_finds_every_project_and_is_told_which(engine):
    deploy = await engine.session(NS, "s", project=BILLING).remember(
        page=note("deploy billing with fly deploy")
    )
    everywhere = await engine.session(NS, "s").remember(page=note("deploy nothing on Fridays"))
    found = await _found(engine, "deploy", None)
    assert found == {deploy.page_id: BILLING, everywhere.page_id: None}
    # Within its own project a page says nothing of where it came from.
    assert (await _found(engine, "deploy", BILLING))[deploy.page_id] is None


async def test_a_note_kept_for_every_project_is_found_in_each(engine):
    dog = await engine.session(NS, "s", project=BILLING).remember(
        page=note("we adopted a beagle called Rex", type=PageType.PREFERENCE), everywhere=True
    )
    for project in (BILLING, WEBSITE, None):
        assert (await _found(engine, "beagle", project)) == {dog.page_id: None}


async def test_listing_without_a_query_leaves_other_projects_out(engine):
    mine = await engine.session(NS, "s", project=WEBSITE).remember(page=note("website uses astro"))
    await engine.session(NS, "s", project=BILLING).remember(page=note("billing uses django", pin=True))
    listed = await engine.session(NS, "s", project=WEBSITE).search(query="", limit=10)
    assert [hit.page_id for hit in listed.results] == [mine.page_id]


async def test_another_projects_page_cannot_be_faulted_pinned_or_forgotten_by_id(engine):
    page = await engine.session(NS, "s", project=BILLING).remember(page=note("billing secret plan"))
    with pytest.raises(PageNotFound):
        await engine.session(NS, "s", project=WEBSITE).page_fault(page_id=page.page_id)
    with pytest.raises(PageNotFound):
        await engine.session(NS, "s", project=WEBSITE).pin_page(page_id=page.page_id, pinned=True)
    with pytest.raises(PageNotFound):
        await engine.session(NS, "s", project=WEBSITE).forget(page_id=page.page_id)
    with pytest.raises(PageNotFound):
        await engine.namespace(NS, project=WEBSITE).get_page(page_id=page.page_id)
    faulted = await engine.session(NS, "s", project=BILLING).page_fault(page_id=page.page_id)
    assert faulted.content


async def test_the_same_text_in_two_projects_is_two_pages_and_in_one_project_one(engine):
    first = await engine.session(NS, "s", project=BILLING).remember(page=note("run make test"))
    again = await engine.session(NS, "s", project=BILLING).remember(page=note("run make test"))
    other = await engine.session(NS, "s", project=WEBSITE).remember(page=note("run make test"))
    assert again.page_id == first.page_id and not again.created
    assert other.page_id != first.page_id and other.created


async def test_a_key_held_by_another_project_is_refused_and_a_rewrite_keeps_the_page_where_it_was(engine):
    await engine.session(NS, "s", project=BILLING).remember(page=note("v1 of the plan"), key="plan")
    with pytest.raises(KeyInOtherProject, match="another project"):
        await engine.session(NS, "s", project=WEBSITE).remember(page=note("the site plan"), key="plan")
    # A reader with no project (an operator's import, a desktop host) may rewrite it; it stays billing's.
    await engine.session(NS, "s").remember(page=note("v2 of the plan"), key="plan")
    page = await engine.namespace(NS, project=BILLING).get_page(page_id="plan")
    assert page.project == BILLING and page.levels[0] == "v2 of the plan"


async def test_transcripts_and_tool_results_belong_to_the_project_they_were_captured_in(engine):
    ingested = await engine.session(NS, "s", project=BILLING).ingest(
        messages=[user("the staging database is pg-7")]
    )
    page = await engine.namespace(NS).get_page(page_id=ingested.page_ids[0])
    assert page.project == BILLING
    assert await _found(engine, "staging database", WEBSITE) == {}


async def test_standing_notes_and_the_manifest_leave_other_projects_out(engine):
    mine = await engine.session(NS, "s", project=WEBSITE).remember(
        page=note("website deploys from main", pin=True)
    )
    theirs = await engine.session(NS, "s", project=BILLING).remember(
        page=note("billing deploys from prod", pin=True)
    )
    standing = await engine.namespace(NS, project=WEBSITE).standing_notes(limit=10)
    assert [item.page_id for item in standing] == [mine.page_id]
    memory = await engine.session(NS, "fresh", project=WEBSITE).memory_map()
    assert theirs.page_id not in {page.page_id for page in memory.available}
    everything = await engine.namespace(NS).standing_notes(limit=10)
    assert {item.page_id: item.project for item in everything} == {
        mine.page_id: WEBSITE,
        theirs.page_id: BILLING,
    }


def test_a_directory_inside_a_git_work_tree_belongs_to_the_work_tree(tmp_path):
    repo = tmp_path / "billing"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "api").mkdir(parents=True)
    assert work_tree(repo / "src" / "api") == str(repo.resolve())
    # A linked work tree or a submodule has a .git file, not a directory: it is a project of its own.
    linked = tmp_path / "billing-fix"
    linked.mkdir()
    (linked / ".git").write_text("gitdir: ../billing/.git/worktrees/fix\n")
    assert work_tree(linked) == str(linked.resolve())


def test_a_directory_outside_any_work_tree_is_its_own_project(tmp_path):
    plain = tmp_path / "notes"
    plain.mkdir()
    assert work_tree(plain) == str(plain.resolve())


def test_a_projects_own_session_name_is_valid_readable_and_distinct():
    first, second = project_session("/home/ana/src/billing"), project_session("/srv/billing")
    assert first.startswith("project-billing-") and first != second
    assert project_session("/").startswith("project-root-")
