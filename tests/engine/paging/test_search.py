import math
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memvm.engine.config import SearchTuning
from memvm.engine.models.pages import PageType, Role
from memvm.engine.models.recall import SearchHit, SearchScope
from memvm.engine.models.writes import IngestMessage
from memvm.engine.paging import tiers
from memvm.engine.paging.ranking import addressed_role
from memvm.engine.paging.search import EXACT_ID_SCORE, search_pages
from memvm.engine.paging.terms import query_terms
from memvm.engine.storage.tokenizer import match_expression

from tests.conftest import NS, assistant, examples, long_text, note, query, user
from tests.engine.old_schema import add_page, add_session, file_at

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
    await engine.session(NS, "s").remember(page=note("alpha beta gamma near content"))
    for probe in FTS_PROBES:
        result = await engine.session(NS, "s").search(query=probe, limit=5)
        assert result.total_pages == 1
    hit = await engine.session(NS, "s").search(query="alpha OR", limit=5)
    assert [r.page_id for r in hit.results] == ["note_000001"]


@settings(
    max_examples=examples(200),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=st.text(max_size=200))
def test_the_match_expression_quotes_every_term(text):
    terms = query_terms(text)
    expression = match_expression(terms)
    assert len(terms) <= 32
    if terms:
        parts = expression.split(" OR ")
        assert all(part.startswith('"') and part.endswith('"') for part in parts)


async def test_stopwords_are_dropped_and_stemming_matches_word_forms(engine):
    await engine.session(NS, "s").remember(page=note("She was running marathons every spring."))
    assert query_terms("what is the run") == ["run"]
    result = await engine.session(NS, "s").search(query="the runner runs")
    assert [r.page_id for r in result.results] == ["note_000001"]


async def test_ranking_is_global_not_the_first_matches_found(engine):
    # Fifty weak matches stored first, then the one page that is about the query.
    for i in range(50):
        await engine.session(NS, "s").remember(page=note(f"Meeting {i} mentioned the garden briefly."))
    best = await engine.session(NS, "s").remember(
        page=note("Garden plan: tomatoes in the garden beds, garden hose, garden shed.")
    )
    result = await engine.session(NS, "s").search(query="garden tomatoes", limit=5)
    assert result.results[0].page_id == best.page_id
    assert [r.score for r in result.results] == sorted((r.score for r in result.results), reverse=True)


async def test_an_exact_page_id_ranks_first(engine):
    target = await engine.session(NS, "s").remember(page=note("unrelated words only"))
    await engine.session(NS, "s").remember(page=note(f"this page talks about {target.page_id} a lot"))
    result = await engine.session(NS, "s").search(query=target.page_id)
    assert result.results[0].page_id == target.page_id
    assert result.results[0].score == EXACT_ID_SCORE


async def test_search_never_crosses_namespaces(engine):
    await engine.session("alice", "s").remember(page=note("alice's secret recipe for plum cake"))
    other = await engine.session("bob", "s").search(query="plum cake recipe")
    by_id = await engine.session("bob", "s").search(query="note_000001")
    assert other.results == [] and other.total_pages == 0
    assert by_id.results == []


async def test_filters_and_session_scope(engine):
    await engine.session(NS, "a").remember(page=note("kiwi orchard notes"))
    await engine.session(NS, "b").remember(page=note("kiwi prices claim", type=PageType.CLAIM))
    everywhere = await engine.session(NS, "a").search(query="kiwi")
    only_a = await engine.session(NS, "a").search(query="kiwi", scope=SearchScope.SESSION)
    claims = await engine.session(NS, "a").search(query="kiwi", page_type=PageType.CLAIM)
    assert {r.session for r in everywhere.results} == {"a", "b"}
    assert {r.session for r in only_a.results} == {"a"}
    assert [r.type for r in claims.results] == [PageType.CLAIM]


async def test_hits_report_tokens_per_level_and_mapping(engine):
    stored = await engine.session(NS, "s").remember(page=note("walnut harvest in October"))
    await engine.session(NS, "s").page_fault(page_id=stored.page_id)
    hit = (await engine.session(NS, "s").search(query="walnut")).results[0]
    assert hit.tokens == stored.tokens
    assert hit.mapped and hit.level == 2
    elsewhere = (await engine.session(NS, "other").search(query="walnut")).results[0]
    assert not elsewhere.mapped and elsewhere.level is None


def said(name: str, content: str) -> IngestMessage:
    return IngestMessage(role=Role.USER, content=content, name=name)


async def test_a_speakers_name_finds_their_lines(engine):
    await engine.session(NS, "s").ingest(
        messages=[
            said("Caroline", "I painted a sunrise over the lake."),
            said("Melanie", "I painted my fence."),
        ]
    )
    found = await engine.session(NS, "s").search(query="What did Caroline paint?")
    assert found.results[0].snippet == "I painted a sunrise over the lake."


async def search_tuned(engine, query: str, tuning: SearchTuning, limit: int = 5) -> list[SearchHit]:
    """search_pages over the engine's pages with `tuning` in place of the engine's own settings."""
    async with engine.db.read(None) as conn:
        found = await search_pages(
            conn,
            namespace=NS,
            viewer_session="s",
            query=query,
            limit=limit,
            tuning=tuning,
            stemmer=engine.stemmer,
        )
    return found.results


async def test_a_weak_match_beside_a_strong_one_in_its_session_ranks_higher(open_engine):
    # The question turn matches best; the answer beside it matches only "kitchen", as does a line
    # of another session that BM25 alone would put first (it is shorter).
    async def order(tuning: SearchTuning) -> list[str]:
        engine = await open_engine(search=tuning)
        found = await engine.session(NS, "s").search(query="plumber fix kitchen", limit=3)
        await engine.close()
        return [hit.snippet for hit in found.results]

    engine = await open_engine()
    await engine.session(NS, "house").ingest(
        messages=[
            user("Which plumber came to fix things?"),
            user("The one from the corner shop, he sorted the kitchen sink in an hour."),
        ]
    )
    await engine.session(NS, "other").ingest(messages=[user("Kitchen lights.")])
    alone = {"neighbour_weight": 0.0, "session_weight": 0.0}
    assert (await order(SearchTuning(**alone)))[1] == "Kitchen lights."
    assert (await order(SearchTuning(session_weight=0.0)))[1].startswith("The one from the corner shop")
    assert (await order(SearchTuning(neighbour_weight=0.0)))[1].startswith("The one from the corner shop")


async def test_the_neighbour_bonus_shrinks_for_pages_that_stand_on_their_own(open_engine):
    engine = await open_engine()
    long_answer = "The one from the corner shop sorted the kitchen sink. " + long_text("errands", 12)
    await engine.session(NS, "house").ingest(
        messages=[user("Which plumber came to fix things?"), user(long_answer)]
    )
    await engine.session(NS, "other").ingest(messages=[user("Kitchen lights.")])

    async def scores(tuning: SearchTuning) -> dict[str, float]:
        hits = await search_tuned(engine, "plumber fix kitchen", tuning, limit=3)
        return {hit.snippet[:10]: hit.score for hit in hits}

    plain = await scores(SearchTuning(neighbour_weight=0.0, session_weight=0.0))
    scaled = await scores(SearchTuning(session_weight=0.0))
    unscaled = await scores(SearchTuning(session_weight=0.0, context_tokens=100_000))
    assert plain["The one fr"] < scaled["The one fr"] < unscaled["The one fr"]


async def test_a_second_round_finds_a_page_through_the_words_of_the_best_matches(engine):
    # "violin" is asked; the best match also says "orchestra" and "rehearsal", and a page that
    # never says "violin" but shares those is found only by the second round.
    await engine.session(NS, "a").remember(
        page=note("My violin needs new strings before the orchestra rehearsal."), key="asked"
    )
    await engine.session(NS, "b").remember(
        page=note("The orchestra rehearsal moved to Thursday evening."), key="related"
    )
    for n in range(8):
        await engine.session(NS, f"c{n}").remember(page=note(f"Groceries list number {n}: bread."))
    one_round = await search_tuned(engine, "violin", SearchTuning())
    assert [hit.page_id for hit in one_round] == ["asked"]
    two_rounds = await search_tuned(engine, "violin", SearchTuning(feedback_pages=1, feedback_terms=5))
    assert [hit.page_id for hit in two_rounds] == ["asked", "related"]
    assert two_rounds[0].score > two_rounds[1].score  # an asked word outweighs the words it brought


async def test_bm25_length_normalisation_decides_between_a_short_and_a_long_match(engine):
    short = "Kayak trip."
    long = "Kayak trip with " + long_text("river", 6) + " kayak again."
    await engine.session(NS, "s").remember(page=note(short), key="short")
    await engine.session(NS, "s").remember(page=note(long), key="long")
    for n in range(4):
        await engine.session(NS, f"o{n}").remember(page=note(f"Unrelated note {n}."))
    plain = {"neighbour_weight": 0.0, "session_weight": 0.0}
    normalised = await search_tuned(engine, "kayak", SearchTuning(**plain))
    assert [hit.page_id for hit in normalised] == ["short", "long"]
    unnormalised = await search_tuned(engine, "kayak", SearchTuning(**plain, bm25_b=0.0))
    assert [hit.page_id for hit in unnormalised] == ["long", "short"]  # two occurrences beat one


async def test_each_pages_score_is_its_bm25_over_the_namespaces_statistics_as_a_share_of_the_best(engine):
    # BM25 with Lucene's inverse document frequency, over the namespace's own statistics.
    texts = {
        "a": "Kayak trip to the lake.",
        "b": "Kayak, kayak and a canoe on the lake; " + "paddles " * 20,
        "c": "A canoe.",
        "d": "Nothing to see.",
    }
    counts = {"a": {"kayak": 1, "lake": 1}, "b": {"kayak": 2, "canoe": 1, "lake": 1}, "c": {"canoe": 1}}
    for key, text in texts.items():
        await engine.session(NS, "s").remember(page=note(text), key=key)
    tuning = SearchTuning(neighbour_weight=0.0, session_weight=0.0)
    hits = await search_tuned(engine, "kayak lake canoe", tuning)
    async with engine.db.read(None) as conn:
        rowids = {
            row["page_id"]: (row["rowid"], row["search_chars"])
            for row in await conn.all(
                query("SELECT page_id, rowid, search_chars FROM pages WHERE namespace = :namespace"),
                namespace=NS,
            )
        }
        total = await conn.one(
            query("SELECT sum(pages), sum(chars) FROM page_counts WHERE namespace = :namespace"), namespace=NS
        )
    pages, chars = int(total[0]), int(total[1])
    stem = dict(
        zip(["kayak", "lake", "canoe"], engine.stemmer.stems(["kayak", "lake", "canoe"]), strict=True)
    )
    postings = [
        {"rowid": rowids[key][0], "stem": stem[word], "tf": tf, "chars": rowids[key][1]}
        for key, words in counts.items()
        for word, tf in words.items()
    ]
    holding = Counter(row["stem"] for row in postings)
    k1, b, average = tuning.bm25_k1, tuning.bm25_b, chars / pages
    expected: dict[int, float] = defaultdict(float)
    for row in postings:
        idf = math.log(1 + (pages - holding[row["stem"]] + 0.5) / (holding[row["stem"]] + 0.5))
        norm = k1 * (1 - b + b * row["chars"] / average)
        expected[row["rowid"]] += idf * row["tf"] * (k1 + 1) / (row["tf"] + norm)
    # Words count as a share of the best page's (fusion.py), so that they weigh against meaning.
    best = max(expected.values())
    assert {hit.page_id: hit.score for hit in hits} == {
        key: round(expected[rowids[key][0]] / best, 6) for key in counts
    }


async def test_a_query_in_the_first_person_prefers_what_the_user_said():
    assert addressed_role("What is the name of my cat?") is Role.USER
    assert addressed_role("Which hotel did you recommend?") is Role.ASSISTANT
    assert addressed_role("You mentioned a recipe I liked, can you remind me?") is None
    assert addressed_role("What did Caroline paint?") is None
    assert addressed_role("I’m not sure") is Role.USER


async def test_pronouns_lift_the_pages_of_the_role_they_name(engine):
    await engine.session(NS, "s").ingest(
        messages=[
            user("My cat is called Miso."),
            assistant("A cat called Miso, lovely; cats like that name."),
        ]
    )
    mine = await engine.session(NS, "s").search(query="what is my cat called")
    yours = await engine.session(NS, "s").search(query="what did you say about the cat called Miso")
    assert mine.results[0].role is Role.USER
    assert yours.results[0].role is Role.ASSISTANT


@pytest.mark.sqlite_only
async def test_files_from_before_the_speaker_index_get_it_when_migrated(open_engine, db_path):
    old = file_at(db_path, 4)
    add_session(old, NS, "s")
    add_page(old, NS, "s", "msg_000001", "Opened a dance studio.", name="Gina")
    old.close()
    migrated = await open_engine()
    found = await migrated.session(NS, "s").search(query="Gina")
    assert [hit.snippet for hit in found.results] == ["Opened a dance studio."]


async def test_in_a_large_namespace_common_terms_count_only_on_the_pages_of_rarer_ones(engine, monkeypatch):
    # Past EXACT_PAGES the rarest terms are read whole, as many as fit in POSTINGS pages:
    # "zeppelin" (2 pages) fits, "weather" (7) does not, and counts only on the zeppelin pages.
    monkeypatch.setattr(tiers, "EXACT_PAGES", 5)
    monkeypatch.setattr(tiers, "POSTINGS", 3)
    for n in range(6):
        await engine.session(NS, "s").remember(page=note(f"The weather report number {n}, weather again."))
    await engine.session(NS, "z1").remember(page=note("A zeppelin flew over."), key="airship")
    await engine.session(NS, "z2").remember(page=note("A zeppelin in bad weather."), key="both")
    found = await engine.session(NS, "s").search(query="weather zeppelin", limit=5)
    assert [hit.page_id for hit in found.results] == ["both", "airship"]
    monkeypatch.setattr(tiers, "EXACT_PAGES", 2_000)  # ranked on every page: the weather pages too
    exact = await engine.session(NS, "s").search(query="weather zeppelin", limit=5)
    assert len(exact.results) == 5 and exact.results[0].page_id == "both"


async def test_a_match_in_a_session_that_matches_well_outranks_an_equal_one_elsewhere(open_engine):
    engine = await open_engine()
    # The garage's "tent" line is shorter, so BM25 alone puts it first; only the camping session
    # also matches the rest of the query.
    await engine.session(NS, "camping").ingest(
        messages=[
            user("We booked the lakeside campsite for the weekend."),
            user("Bring the tent."),
            user("ok"),
        ]
    )
    await engine.session(NS, "garage").ingest(messages=[user("Tent sold."), user("ok"), user("ok")])

    async def first_tent(tuning: SearchTuning) -> str:
        hits = await search_tuned(engine, "lakeside campsite tent", tuning)
        return next(hit.session for hit in hits if "tent" in hit.snippet.lower())

    assert await first_tent(SearchTuning(neighbour_weight=0.0)) == "camping"
    assert await first_tent(SearchTuning(neighbour_weight=0.0, session_weight=0.0)) == "garage"


async def test_a_speaker_the_query_names_lifts_that_speakers_pages(open_engine):
    # Caroline speaks on half the pages, so her name weighs nothing in BM25; Melanie's painting
    # line is shorter and would win without the boost.
    engine = await open_engine()
    lines = [
        said(
            "Caroline",
            "I painted a sunrise over the lake last weekend with my new brushes, then cleaned them "
            "for an hour in the garden shed before dinner.",
        ),
        said("Melanie", "I painted the fence."),
        *[said("Caroline", f"The weather was lovely on day {n}.") for n in range(3)],
        *[said("Melanie", f"The dog slept all of day {n}.") for n in range(3)],
    ]
    await engine.session(NS, "s").ingest(messages=lines)

    async def first(tuning: SearchTuning) -> str:
        hits = await search_tuned(engine, "What did Caroline paint?", tuning, limit=2)
        return hits[0].snippet

    others_off = {"neighbour_weight": 0.0, "session_weight": 0.0}
    assert await first(SearchTuning(**others_off, speaker_boost=0.0)) == "I painted the fence."
    assert (await first(SearchTuning(**others_off))).startswith("I painted a sunrise")


def test_clitics_leave_no_stray_terms_in_a_query():
    assert query_terms("What is Melanie's hobby?") == ["melanie", "hobby"]
    assert query_terms("Melanie\u2019s hobby") == ["melanie", "hobby"]
    assert query_terms("they're sure we'll go, I've said I'd come, I'm in, don't worry") == [
        "sure",
        "go",
        "said",
        "come",
        "worry",
    ]
    # A letter that is a word of its own stays: only what follows an apostrophe is a clitic.
    assert query_terms("vitamin d and plan s") == ["vitamin", "d", "plan", "s"]


async def test_a_possessive_finds_its_owner_not_every_page_with_an_apostrophe(engine):
    owner = await engine.session(NS, "s").remember(page=note("Melanie's hobby is pottery."))
    for text in ("That's fine.", "Let's go there.", "It's late and she's tired.", "What's next?"):
        await engine.session(NS, "s").remember(page=note(text))
    found = await engine.session(NS, "s").search(query="Melanie's hobby", limit=5)
    assert [hit.page_id for hit in found.results] == [owner.page_id]


async def test_a_remembered_key_is_searchable_by_its_words(engine):
    await engine.session(NS, "s").remember(page=note("Black, no sugar."), key="coffee-order")
    await engine.session(NS, "s").remember(page=note("The order of the meeting items."))
    found = await engine.session(NS, "s").search(query="coffee", limit=5)
    assert [hit.page_id for hit in found.results] == ["coffee-order"]


async def test_generated_ids_are_not_searched_as_words(engine):
    await engine.session(NS, "s").remember(page=note("a line about lunch"))
    found = await engine.session(NS, "s").search(query="note", limit=5)
    assert found.results == []


async def test_scores_in_one_namespace_do_not_move_when_another_namespace_writes(engine):
    lines = [
        "the otters in the river hold hands while they sleep",
        "a report on river pollution and the otters",
        "my vault code is in the blue notebook",
        "the vault of the cathedral was painted blue",
        "otters eat fish and crabs",
    ]
    for line in lines:
        await engine.session("alice", "s").remember(page=note(line))
    queries = ["otters river", "vault code", "blue", "fish crabs otters", "cathedral"]

    async def ranked() -> list[list[tuple[str, float]]]:
        return [
            [
                (hit.page_id, hit.score)
                for hit in (await engine.session("alice", "s").search(query=q, limit=5)).results
            ]
            for q in queries
        ]

    before = await ranked()
    for index in range(60):
        text = f"otters vault blue river {index} otters otters cathedral fish"
        await engine.session("mallory", "s").remember(page=note(text))
    after = await ranked()
    assert after == before
    assert all(results for results in before)


async def test_a_namespace_of_a_few_pages_ranks_the_better_match_first(engine):
    best = await engine.session(NS, "s").remember(page=note("a red apple pie"))
    await engine.session(NS, "s").remember(page=note("a green apple"))
    await engine.session(NS, "s").remember(page=note("a red car in the street"))
    found = await engine.session(NS, "s").search(query="red apple", limit=5)
    assert found.results[0].page_id == best.page_id
    assert all(hit.score > 0.05 for hit in found.results)
    scores = [hit.score for hit in found.results]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[1]
    alone = await engine.session(NS, "s").search(query="pie", limit=5)
    assert alone.results[0].score > 0.05


async def test_an_empty_result_says_why_and_what_to_try(engine):
    empty = await engine.session(NS, "s").search(query="anything")
    assert empty.results == [] and "Nothing is stored" in empty.message
    await engine.session(NS, "s").remember(page=note("the garden gate is green"))
    missing = await engine.session(NS, "s").search(query="submarine")
    assert missing.results == []
    assert "No page matches" in missing.message and "manifest" in missing.message
    assert "Drop" not in missing.message
    filtered = await engine.session(NS, "s").search(query="garden", page_type=PageType.CLAIM)
    assert filtered.results == [] and "Drop type" in filtered.message
    stopwords = await engine.session(NS, "s").search(query="what is the")
    assert stopwords.results == [] and "no word to search for" in stopwords.message
    found = await engine.session(NS, "s").search(query="garden")
    assert found.results and found.message is None


async def test_a_query_of_common_terms_only_ranks_the_newest_pages_holding_all_of_them(engine, monkeypatch):
    monkeypatch.setattr(tiers, "EXACT_PAGES", 5)
    monkeypatch.setattr(tiers, "POSTINGS", 3)
    monkeypatch.setattr(tiers, "CANDIDATES", 4)
    for n in range(6):
        await engine.session(NS, "s").remember(page=note(f"The ferry number {n} is late."), key=f"late-{n}")
    for n in range(6):
        await engine.session(NS, "s").remember(
            page=note(f"The ferry {n} left the harbour."), key=f"harbour-{n}"
        )
    # "ferry" (12 pages) and "harbour" (6) are both past the budget: the newest 4 holding both.
    found = await engine.session(NS, "s").search(query="ferry harbour", limit=10)
    assert {hit.page_id for hit in found.results} == {f"harbour-{n}" for n in range(2, 6)}
    # No page holds all three words: then the newest holding two of them, pair by pair.
    mixed = await engine.session(NS, "s").search(query="ferry late harbour", limit=5)
    newest = {f"late-{n}" for n in range(2, 6)} | {f"harbour-{n}" for n in range(2, 6)}
    assert len(mixed.results) == 5 and {hit.page_id for hit in mixed.results} <= newest


async def test_in_a_large_namespace_a_query_of_words_on_no_page_finds_nothing(engine, monkeypatch):
    monkeypatch.setattr(tiers, "EXACT_PAGES", 5)
    for n in range(6):
        await engine.session(NS, "s").remember(page=note(f"The ferry number {n} is late."))
    missing = await engine.session(NS, "s").search(query="submarine periscope")
    assert missing.results == [] and "No page matches" in (missing.message or "")
    # One word on no page beside one on every page: the common word alone is ranked.
    found = await engine.session(NS, "s").search(query="submarine ferry")
    assert len(found.results) == 5


async def test_pinned_only_finds_a_pinned_page_ranked_below_the_limit(engine):
    for i in range(60):
        await engine.session(NS, "s").remember(
            page=note(f"deploy deploy deploy rollout {i}"), key=f"loud-{i}"
        )
    await engine.session(NS, "s").remember(page=note("one quiet deploy note among many words"), key="quiet")
    await engine.session(NS, "s").pin_page(page_id="quiet", pinned=True, place=False)
    everything = await engine.session(NS, "s").search(query="deploy", limit=50)
    assert "quiet" not in [hit.page_id for hit in everything.results]
    pinned = await engine.session(NS, "s").search(query="deploy", limit=50, pinned_only=True)
    assert [hit.page_id for hit in pinned.results] == ["quiet"]
    nothing = await engine.session(NS, "s").search(query="rollout", limit=5, pinned_only=True)
    assert nothing.results == [] and "pinned only" in nothing.message


async def test_a_query_naming_a_time_lifts_the_pages_written_then(open_engine, clock):
    # Forty days ago a short line about buying a kettle; ten days ago a longer one about a smoker.
    # BM25 prefers the short line; "10 days ago" names when the other was said.
    plain = {"neighbour_weight": 0.0, "session_weight": 0.0}
    untimed = await open_engine(search=SearchTuning(**plain, time_boost=0.0))
    timed = await open_engine(search=SearchTuning(**plain, time_boost=1.0))
    await timed.session(NS, "s").remember(page=note("I want to buy a kettle."), key="kettle")
    clock.advance(30 * 86_400)
    smoker = "Went out to buy a smoker at the hardware store downtown, after work, with my neighbour."
    await timed.session(NS, "s").remember(page=note(smoker), key="smoker")
    for n in range(4):
        await timed.session(NS, "s").remember(page=note(f"Unrelated note {n}."))
    clock.advance(10 * 86_400)

    async def first(engine) -> str:
        found = await engine.session(NS, "s").search(query="What did I buy 10 days ago?")
        return found.results[0].page_id

    assert await first(untimed) == "kettle"
    assert await first(timed) == "smoker"


async def test_an_empty_query_lists_pinned_pages_then_the_newest_within_the_filters(engine, clock):
    for name in ("first", "second", "third"):
        await engine.session(NS, "s1").remember(page=note(f"the {name} note"), key=name)
    await engine.session(NS, "s1").remember(page=note("an old pinned note", pinned=True), key="kept")
    await engine.session(NS, "s1").remember(page=note("short lived"), key="brief", ttl_seconds=5)
    await engine.session(NS, "s2").ingest(messages=[user("hello from another session")])
    clock.advance(10)  # the short-lived page has expired

    listed = await engine.session(NS, "s1").search(query="", limit=4)
    assert [hit.page_id for hit in listed.results] == ["kept", listed.results[1].page_id, "third", "second"]
    assert listed.results[1].session == "s2" and listed.total_pages == 5
    notes = await engine.session(NS, "s1").search(query=" ", page_type=PageType.NOTE, limit=10)
    assert [hit.page_id for hit in notes.results] == ["kept", "third", "second", "first"]
    mine = await engine.session(NS, "s1").search(query="", scope=SearchScope.SESSION, limit=10)
    assert {hit.session for hit in mine.results} == {"s1"}
    empty = await engine.session("other", "s1").search(query="")
    assert (empty.results, empty.total_pages) == ([], 0) and empty.message
