"""The manifest reads page rows, never the long texts beside them."""

import sqlite3
import statistics
import time

import anyio
import pytest

from tests.conftest import NS, note

pytestmark = pytest.mark.anyio

PAGES = 20
CHARS_EACH = 100_000


@pytest.mark.sqlite_only
async def test_page_rows_hold_no_long_text_so_a_manifest_over_large_pages_stays_fast(
    engine, db_path, report_figure
):
    text = ("The quarterly tool log line reads status ok and moves on. " * (CHARS_EACH // 58 + 1))[
        :CHARS_EACH
    ]
    for n in range(PAGES):
        await engine.session("big", "s").remember(page=note(f"{n} {text}"))
    await engine.session(NS, "s").remember(page=note("A small walrus note."))
    with sqlite3.connect(db_path) as conn:
        # A row longer than a database page spills into overflow pages, which every read of a
        # column stored after the text walked through: the page rows must have none.
        spilled = conn.execute(
            "SELECT count(*) FROM dbstat WHERE name IN ('pages', 'pages_by_recency') AND pagetype = 'overflow'"
        ).fetchone()[0]
        texts = conn.execute(
            "SELECT count(*) FROM dbstat WHERE name = 'page_texts' AND pagetype = 'overflow'"
        )
        assert texts.fetchone()[0] > 0  # the text is stored, apart
    assert spilled == 0

    searches: list[float] = []
    manifest_s = 0.0

    async def manifest() -> None:
        nonlocal manifest_s
        started = time.perf_counter()
        for _ in range(5):
            found = await engine.session("big", "s").memory_map()
            assert found.counts["pages"] == PAGES
        manifest_s = (time.perf_counter() - started) / 5

    async def other_tenant() -> None:
        for _ in range(10):
            started = time.perf_counter()
            found = await engine.session(NS, "s").search(query="walrus")
            searches.append(time.perf_counter() - started)
            assert [hit.snippet for hit in found.results] == ["A small walrus note."]

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(manifest)
            group.start_soon(other_tenant)
    assert manifest_s < 60  # a sanity bound, not a measurement: the figure below says how long
    report_figure(
        f"large_pages: pages={PAGES} chars_each={CHARS_EACH} manifest_s={manifest_s:.3f} "
        f"other_search_p50_ms={statistics.median(searches) * 1000:.1f}"
    )
