import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memvm.engine.models import PageType, SearchScope
from memvm.engine.search import EXACT_ID_SCORE, match_expression, query_terms

from tests.conftest import NS, note

pytestmark = pytest.mark.anyio

FTS_PROBES = [
    "alpha OR",
    "-x",
    "NEAR(alpha",
    '"',
    "*",
    "''",
    "content: secret",
    "pages_fts:alpha",
    "alpha AND NOT beta",
    "^start",
    "(unbalanced",
    "{col1 col2}: x",
    "a\u0000b",
    "'; DROP TABLE pages; --",
]


async def test_fts_syntax_in_a_query_is_searched_as_words_never_as_operators(engine):
    await engine.remember(namespace=NS, session="s", page=note("alpha beta gamma near content"))
    for probe in FTS_PROBES:
        result = await engine.search(namespace=NS, session="s", query=probe, limit=5)
        assert result.total_pages == 1
    hit = await engine.search(namespace=NS, session="s", query="alpha OR", limit=5)
    assert [r.page_id for r in hit.results] == ["note_000001"]


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_the_match_expression_quotes_every_term(text):
    terms = query_terms(text)
    expression = match_expression(terms)
    assert len(terms) <= 32
    if terms:
        parts = expression.split(" OR ")
        assert all(part.startswith('"') and part.endswith('"') for part in parts)


async def test_stopwords_are_dropped_and_stemming_matches_word_forms(engine):
    await engine.remember(namespace=NS, session="s", page=note("She was running marathons every spring."))
    assert query_terms("what is the run") == ["run"]
    result = await engine.search(namespace=NS, session="s", query="the runner runs")
    assert [r.page_id for r in result.results] == ["note_000001"]


async def test_ranking_is_global_not_the_first_matches_found(engine):
    # Fifty weak matches stored first, then the one page that is about the query.
    for i in range(50):
        await engine.remember(
            namespace=NS, session="s", page=note(f"Meeting {i} mentioned the garden briefly.")
        )
    best = await engine.remember(
        namespace=NS,
        session="s",
        page=note("Garden plan: tomatoes in the garden beds, garden hose, garden shed."),
    )
    result = await engine.search(namespace=NS, session="s", query="garden tomatoes", limit=5)
    assert result.results[0].page_id == best.page_id
    assert [r.score for r in result.results] == sorted((r.score for r in result.results), reverse=True)


async def test_an_exact_page_id_ranks_first(engine):
    target = await engine.remember(namespace=NS, session="s", page=note("unrelated words only"))
    await engine.remember(
        namespace=NS, session="s", page=note(f"this page talks about {target.page_id} a lot")
    )
    result = await engine.search(namespace=NS, session="s", query=target.page_id)
    assert result.results[0].page_id == target.page_id
    assert result.results[0].score == EXACT_ID_SCORE


async def test_search_never_crosses_namespaces(engine):
    await engine.remember(namespace="alice", session="s", page=note("alice's secret recipe for plum cake"))
    other = await engine.search(namespace="bob", session="s", query="plum cake recipe")
    by_id = await engine.search(namespace="bob", session="s", query="note_000001")
    assert other.results == [] and other.total_pages == 0
    assert by_id.results == []


async def test_filters_and_session_scope(engine):
    await engine.remember(namespace=NS, session="a", page=note("kiwi orchard notes"))
    await engine.remember(namespace=NS, session="b", page=note("kiwi prices claim", type=PageType.CLAIM))
    everywhere = await engine.search(namespace=NS, session="a", query="kiwi")
    only_a = await engine.search(namespace=NS, session="a", query="kiwi", scope=SearchScope.SESSION)
    claims = await engine.search(namespace=NS, session="a", query="kiwi", page_type=PageType.CLAIM)
    assert {r.session for r in everywhere.results} == {"a", "b"}
    assert {r.session for r in only_a.results} == {"a"}
    assert [r.type for r in claims.results] == [PageType.CLAIM]


async def test_hits_report_tokens_per_level_and_mapping(engine):
    stored = await engine.remember(namespace=NS, session="s", page=note("walnut harvest in October"))
    await engine.page_fault(namespace=NS, session="s", page_id=stored.page_id)
    hit = (await engine.search(namespace=NS, session="s", query="walnut")).results[0]
    assert hit.tokens == stored.tokens
    assert hit.mapped and hit.level == 2
    elsewhere = (await engine.search(namespace=NS, session="other", query="walnut")).results[0]
    assert not elsewhere.mapped and elsewhere.level is None
