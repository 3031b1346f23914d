"""Every benchmark in tests/bench, run as the real process at a small size: it exits 0 and prints
its figures in their usual shape. The figures themselves are not checked (a benchmark reports
them; these tests check that it still can), so a change that breaks a benchmark fails here and
not on the day someone needs its numbers.

What a benchmark needs beyond memvm: PostgreSQL is the session's throwaway server (the `postgres`
fixture); the predecessor of the scale benchmark runs from the environment that `scale.py
--install-predecessor` creates, and its test skips without it (fails with
MEMVM_REQUIRE_PREDECESSOR=1); the retrieval data is read in place from $MEMVM_BENCH_DATA, else
../shared/bench beside the project, and those tests skip without it; the browser view's benchmark
times Chromium's first render only where Playwright and Chromium are installed (and must with
MEMVM_REQUIRE_BROWSER=1).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.bench.measure import OPERATIONS
from tests.bench.scale import PREDECESSOR, PREDECESSOR_PYTHON
from tests.conftest import fresh_postgres_database

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "bench"
DATA = Path(os.environ.get("MEMVM_BENCH_DATA", ROOT.parent / "shared" / "bench"))
LOCOMO = DATA / "locomo_dev.json"
ORACLE = DATA / "longmemeval_oracle_dev.json.gz"
NEEDS_DATA = pytest.mark.skipif(
    not (LOCOMO.exists() and ORACLE.exists()),
    reason=f"no retrieval data at {DATA} (MEMVM_BENCH_DATA names the folder): retrieval benchmarks skipped",
)

# A figure as the benchmarks print them: 12, 1,234, 0.875, 12.5.
NUM = r"\d[\d,]*(?:\.\d+)?"
# A recall that a small sample can leave undefined (no question in a fold or category).
RECALL = rf"(?:{NUM}|nan)"


def bench(script: str, *args: Any, python: Path | str = sys.executable) -> str:
    """The standard output of `script` run with `args`, once it has exited 0."""
    done = subprocess.run(
        [str(python), script, *map(str, args)],
        cwd=BENCH,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{script} exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def lines(pattern: str, out: str) -> list[str]:
    """The whole lines of `out` that match `pattern`."""
    return re.findall(rf"^{pattern}$", out, re.MULTILINE)


def last_json(out: str) -> Any:
    return json.loads(out.strip().splitlines()[-1])


def postgres_url(request: pytest.FixtureRequest) -> str:
    """The session's PostgreSQL server, where a benchmark makes (and drops) databases of its own."""
    return str(request.getfixturevalue("postgres").url)


def test_scale_memvm_fills_in_bulk_and_times_every_operation(backend, request):
    on_postgres = ["--db-url", postgres_url(request)] if backend == "postgresql" else []
    result = last_json(bench("scale_memvm.py", "--pages", 300, "--samples", 5, "--bulk", *on_postgres))
    assert (result["system"], result["backend"], result["fill"], result["pages"]) == (
        "memvm",
        backend,
        "bulk",
        300,
    )
    assert list(result["ops"]) == list(OPERATIONS)
    figures = ("p50_ms", "p95_ms", "ops_per_s")
    assert all(
        op["n"] == 5 and all(isinstance(op[f], float) for f in figures) for op in result["ops"].values()
    )
    assert isinstance(result["ingest_pages_per_s"], float)
    assert result["db_bytes"] > 0 and result["peak_rss_mb"] > 0


def test_scale_tables_memvm_against_its_predecessor_at_each_size(tmp_path):
    installed = PREDECESSOR_PYTHON.exists()
    out_file = tmp_path / "scale.json"
    # 100 pages through ingest, 200 through write_history.
    out = bench(
        "scale.py",
        *("--sizes", "100,200", "--samples", 5, "--bulk-above", 150, "--out", out_file),
        *([] if installed else ["--predecessor-max", 0]),
    )
    theirs = rf"{NUM} / +{NUM} +{NUM}x" if installed else "— +—"
    for pages in (100, 200):
        for operation in OPERATIONS:
            row = rf" +{pages} +{re.escape(operation)} +{NUM} / +{NUM} +{theirs}"
            assert len(lines(row, out)) == 1, f"no row for {operation} at {pages} pages:\n{out}"
    assert lines(rf" +100 +fill \(pages/s\) +{NUM} +(?:{NUM}|—)", out)
    assert lines(rf" +200 +bulk fill \(pages/s\) +{NUM} +(?:{NUM}|—)", out)
    assert lines(rf"scale pages=200 search_p50_ms={NUM} fault_p50_ms={NUM} peak_rss_mb={NUM}", out)
    runs = json.loads(out_file.read_text())["runs"]
    assert [run["pages"] for run in runs] == [100, 200]
    assert [run["memvm"]["fill"] for run in runs] == ["ingest", "bulk"]


def test_scale_predecessor_times_the_same_operations_on_the_predecessor():
    if not PREDECESSOR_PYTHON.exists():
        reason = f"no {PREDECESSOR} environment: tests/bench/scale.py --install-predecessor creates it"
        if os.environ.get("MEMVM_REQUIRE_PREDECESSOR") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    out = bench("scale_predecessor.py", "--pages", 300, "--samples", 5, python=PREDECESSOR_PYTHON)
    result = last_json(out)
    assert (result["system"], result["pages"]) == ("chuk-ai-session-manager", 300)
    assert list(result["ops"]) == list(OPERATIONS)
    assert all(op["n"] == 5 for op in result["ops"].values())


def test_search_scale_reports_its_times_and_agreement_with_exact_ranking(tmp_path):
    # Caps this small make a namespace of 300 pages large: the bounded search is what runs.
    out = bench("search_scale.py", "--pages", 300, "--samples", 20, "--dir", tmp_path, "--tiers", "50,10,5")
    assert lines(r"300 pages, 20 searches at limit 10 \(EXACT_PAGES 50, POSTINGS 10, CANDIDATES 5\)", out)
    for name in ("search_pages", "exact ranking"):
        assert lines(rf"  {name}: +p50 {NUM} ms  p95 {NUM} ms", out), out
    for name in ("top-10 agreement", "the same, BM25 alone"):
        assert lines(rf"  {name}: +mean [01]\.\d{{3}}, searches at 90% or more \d+%", out), out
    # The filled file is kept for the next run.
    assert (tmp_path / "search-300.filled").exists()


def test_meaning_scale_times_search_with_meaning_beside_words_alone(tmp_path):
    out = bench("meaning_scale.py", "--pages", 300, "--samples", 10, "--bases", 64, "--dir", tmp_path)
    assert lines(r"300 pages in one namespace, 10 searches at limit 10", out), out
    assert lines(rf"  by words alone: +p50 {NUM} ms  p95 {NUM} ms", out), out
    assert lines(rf"  words and meaning: +p50 {NUM} ms  p95 {NUM} ms  \(every vector scored\)", out), out
    assert lines(rf"  p95 ratio: +{NUM}", out), out
    assert lines(rf"  first search with meaning \(vectors read into memory\): {NUM} ms", out), out
    assert lines(rf"  peak resident memory: {NUM} MB", out), out


def test_meaning_scale_times_a_namespace_searched_through_its_graph_against_every_vector(tmp_path):
    out = bench(
        "meaning_scale.py",
        "--pages",
        300,
        "--samples",
        10,
        "--bases",
        64,
        "--dir",
        tmp_path,
        "--graph-above",
        100,
    )
    assert lines(rf"  words and meaning: +p50 {NUM} ms  p95 {NUM} ms  \(through the graph\)", out), out
    assert lines(rf"  graph built in the background in {NUM} s", out), out
    assert lines(rf"  baseline, every vector scored: p50 {NUM} ms  p95 {NUM} ms  \(p95 ratio {NUM}\)", out), (
        out
    )
    # Three hundred nearly alike vectors: the graph's int8 distances can swap a near tie out of its
    # candidates (about one run in three misses one of the hundred nearest), never more than that.
    recall = re.search(
        r"^  the graph's recall: ([01]\.\d{3}) of the exact 10 nearest \(mean cosine (-?\d\.\d{4}) lower\)$",
        out,
        re.MULTILINE,
    )
    assert recall, out
    assert float(recall[1]) >= 0.95 and float(recall[2]) < 0.005, out


def test_ingest_meaning_times_ingest_while_the_server_embeds_against_lexical():
    out = bench("ingest_meaning.py", "--pages", 100, "--rounds", 1)
    assert lines(r"ingest over MCP \(stdio\), 100 pages a round, 1 rounds, 50 messages a call", out), out
    assert lines(rf"  --search lexical \(no encoder\): +{NUM} pages/s", out), out
    assert lines(rf"  as installed \(embedding beside\): {NUM} pages/s", out), out
    assert lines(rf"  slowdown: {NUM}x", out), out
    assert lines(rf"  every page searchable by meaning {NUM} s after the last write", out), out


def small_paraphrase(folder: Path) -> Path:
    """The first 12 facts of the project's paraphrase set (24 questions) among 24 of its
    distractors: the same shape at a fifth of the embedding."""
    whole = json.loads((BENCH / "data" / "paraphrase_dev.json").read_text())
    path = folder / "paraphrase_small.json"
    path.write_text(
        json.dumps(whole | {"facts": whole["facts"][:12], "distractors": whole["distractors"][:24]})
    )
    return path


def small_locomo(folder: Path) -> Path:
    """LoCoMo's first conversation cut to its first three sessions, with the questions answered
    within them."""
    first = json.loads(LOCOMO.read_text())[0]
    kept = {"session_1", "session_2", "session_3"}
    conversation = {
        key: value
        for key, value in first["conversation"].items()
        if not key.startswith("session_") or key.removesuffix("_date_time") in kept
    }
    ids = {turn["dia_id"] for session in kept for turn in conversation[session]}
    qa = [asked for asked in first["qa"] if set(re.findall(r"D\d+:\d+", str(asked.get("evidence")))) <= ids]
    path = folder / "locomo_small.json"
    path.write_text(json.dumps([first | {"conversation": conversation, "qa": qa}]))
    return path


def test_retrieval_reports_the_paraphrase_set_by_words_by_meaning_and_fused(tmp_path):
    data = small_paraphrase(tmp_path)
    out = bench(
        "retrieval.py", "--dataset", "paraphrase", "--data", data, "--out", tmp_path / "paraphrase.json"
    )
    for mode in ("lexical", "semantic", "fused", "rrf"):
        assert lines(rf"{mode} +24( +{NUM}){{4}}", out), out
    modes = json.loads((tmp_path / "paraphrase.json").read_text())["modes"]
    # The set's questions share no word with their facts: words alone find none of them.
    assert modes["lexical"]["R@10"] == 0 and modes["semantic"]["R@5"] > 0.5


def test_meaning_precision_reports_unrelated_prompts_and_recall_for_each_floor(tmp_path):
    out = bench("meaning_precision.py", "--sets", "check", "--floors=-1,0.3", "--out", tmp_path / "p.json")
    assert lines(rf"check +-1\.00 +{NUM} of 30 +{NUM} of 30 +{RECALL}", out), out
    assert lines(rf"check +0\.30 +{NUM} of 30 +{NUM} of 30 +{RECALL}  \(default\)", out), out
    rows = json.loads((tmp_path / "p.json").read_text())["check"]
    # The floor is what keeps a prompt about nothing remembered from finding a page by meaning.
    assert rows["0.3"]["unrelated"] < rows["-1.0"]["unrelated"]


@NEEDS_DATA
def test_fusion_tuning_cross_validates_on_a_sample(tmp_path):
    out = bench(
        "fusion_tuning.py",
        *("--locomo", small_locomo(tmp_path), "--longmemeval", ORACLE, "--limit", 1, "--questions", 3),
        *("--paraphrase", small_paraphrase(tmp_path), "--quick", "--out", tmp_path / "fusion.json"),
    )
    for dataset in ("paraphrase", "LoCoMo", "LongMemEval_S"):
        for row in ("lexical", "semantic", "fused, held out", r"fused, the defaults \(development\)"):
            assert lines(rf"{dataset} {row} +{RECALL} +{RECALL} +{RECALL}", out), out
    assert len(json.loads((tmp_path / "fusion.json").read_text())["chosen_per_fold"]) == 5


def test_forget_scale_forgets_beside_a_writer_and_reports_what_it_waited(backend, tmp_path, request):
    # On PostgreSQL it fills an empty database of its own, where SQLite copies search_scale's file.
    on_postgres = []
    if backend == "postgresql":
        on_postgres = ["--db-url", fresh_postgres_database(request.getfixturevalue("postgres"))]
    out = bench("forget_scale.py", "--pages", 300, "--forgets", 2, "--dir", tmp_path, *on_postgres)
    assert len(lines(rf"  forget msg_\d{{6}}: {NUM} s, purged=(?:True|False)", out)) == 2, out
    beside = rf"  writer beside: \d+ remembers, p50 {NUM} ms, p95 {NUM} ms, max {NUM} ms"
    if backend == "sqlite":
        assert lines(rf"300 pages, full-text index {NUM} MiB", out), out
        assert lines(rf"{beside}; largest WAL seen {NUM} MiB", out), out
        assert lines(rf"  after: full-text index {NUM} MiB, file {NUM} MiB", out), out
    else:
        assert lines(rf"300 pages on PostgreSQL, filled in {NUM} s", out), out
        assert lines(beside, out), out


def test_e2e_times_each_tool_against_noop_on_both_transports_and_the_start(tmp_path):
    out = bench("e2e.py", "--calls", 5, "--pages", 100, "--starts", 1, "--out", tmp_path / "e2e.json")
    tools = ("noop", "page_fault", "search_pages", "bind_value", "check_ungrounded", "check_tool_call")
    for transport in ("stdio", "streamable-http"):
        for tool in tools:
            added = "—" if tool == "noop" else rf"[+-]{NUM} ms"
            assert lines(rf"{transport} +{tool} +{NUM} +{NUM} +{added}", out), f"{transport} {tool}:\n{out}"
    for server in ("memvm", "minimal MCPServer"):
        assert lines(rf"start to first result, {server}: median {NUM} ms, p95 {NUM} ms", out), out
    assert lines(rf"e2e stdio_search_p50_ms={NUM} .* minimal_startup_ms={NUM}", out), out
    assert json.loads((tmp_path / "e2e.json").read_text())["calls"] == 5


def test_hook_latency_times_each_hook_beside_a_bare_python_start():
    out = bench("hook_latency.py", "--runs", 2)
    for way in (
        "python -c pass",
        "PreToolUse, background",
        "UserPromptSubmit, background",
        "PreToolUse, own process",
        "UserPromptSubmit, own process",
    ):
        assert lines(rf"{re.escape(way)} +median +{NUM} ms  p90 +{NUM} ms  \({NUM} bare starts\)", out), out


def test_cli_start_times_each_help_and_an_own_process_hook_beside_a_bare_python_start():
    out = bench("cli_start.py", "--runs", 2)
    items = [
        "python -c pass",
        "python -m memvm.server --help",
        "memvm --help",
        *(f"memvm {command} --help" for command in ("serve", "ui", "doctor", "export", "import", "hooks")),
        "memvm hook, own process",
    ]
    for item in items:
        assert lines(rf"{re.escape(item)} +median +{NUM} ms  \( *{NUM} bare starts\)", out), out
    assert len(out.splitlines()) == len(items)


def test_large_pages_times_the_manifest_against_schema_6():
    out = bench("large_pages.py", 20, 20_000)
    for name in ("memvm", "schema6"):
        figures = (
            rf"large_pages\[{name}\]: pages=20 chars_each=20000 manifest_s={NUM} other_search_p50_ms={NUM}"
        )
        assert lines(figures, out), out
    assert "speedup_manifest" in last_json(out)


def test_redaction_times_each_kind_of_text_and_the_hostile_ones():
    out = bench("redaction.py", "--kb", 8, "--runs", 1)
    for name in (
        "prose",
        "shell session",
        "engine sources",
        r"hook prompt \(2 KB\)",
        "hostile: mysql commands",
    ):
        assert lines(rf"{name} +chars= *{NUM}  median +{NUM} ms +{NUM} M chars/s", out), out


def test_bench_procedures_times_hints_against_a_group_by_over_the_log():
    out = bench("bench_procedures.py", 600, "--tail", 200)
    assert lines(rf"logged calls: 600 \(filled in {NUM} s\)", out), out
    for name in (
        r"get_procedural_hints \(latest tools\)",
        r"get_procedural_hints \(tools=5 named\)",
        r"get_procedural_hints \(error_type\)",
        r"baseline: the same figures from the log \(GROUP BY\)",
    ):
        assert lines(rf"{name} +median +{NUM} ms   p95 +{NUM} ms", out), out


def test_ui_first_render_times_the_view_on_a_small_and_a_larger_file():
    out = bench("ui_first_render.py", "--pages", 200, "--baseline-pages", 100, "--runs", 2)
    requests = [
        "first load",
        "5 screens of 200",
        "screen 9/10 down",
        "search",
        "context",
        "export (whole namespace)",
    ]
    if os.environ.get("MEMVM_REQUIRE_BROWSER") or "the first render in a browser is not timed" not in out:
        requests.append("first render in Chromium")
    for request in requests:
        row = rf"{re.escape(request)} +100 pages +{NUM} ms +200 pages +{NUM} ms"
        assert lines(row, out), f"no row for {request}:\n{out}"
    assert len(lines(rf"  export: server peak memory {NUM} MB before, {NUM} MB after", out)) == 2, out


def test_view_exports_reports_what_unread_exports_hold(backend, request):
    on_postgres = (
        ["--backend", "postgresql", "--db-url", postgres_url(request)] if backend == "postgresql" else []
    )
    out = bench("view_exports.py", "--pages", 200, "--requests", 10, "--hold", 1, *on_postgres)
    connections = NUM if backend == "postgresql" else "None"
    figures = (
        rf"view_exports: backend={backend} pages=200 export_bytes={NUM} requests=10 200=2 429=8 "
        rf"peak_spooled_bytes={NUM} peak_pg_connections={connections} search_ms quiet={NUM} "
        rf"during median={NUM} max={NUM} spools_freed_after_s=None log_bytes={NUM}"
    )
    assert lines(figures, out), out


@NEEDS_DATA
def test_retrieval_scores_longmemeval_by_its_own_protocol(tmp_path):
    out = bench(
        "retrieval.py",
        *("--dataset", "longmemeval", "--data", ORACLE, "--turns", "user", "--limit", 4),
        *("--out", tmp_path / "retrieval.json"),
    )
    assert lines(rf"overall +\d+( +{NUM}){{6}}( +{NUM}){{2}}", out), out
    summary = rf"overall R@5={NUM} R@10={NUM} MRR={NUM} sessions_all@5={NUM} sessions_all@10={NUM} p95_ms={NUM} n=\d+"
    assert lines(summary, out), out


@NEEDS_DATA
def test_retrieval_scores_the_same_through_mcp_on_postgresql(tmp_path, request):
    out = bench(
        "retrieval.py",
        *("--dataset", "longmemeval", "--data", ORACLE, "--limit", 3, "--via", "mcp"),
        *("--db-url", postgres_url(request), "--out", tmp_path / "retrieval.json"),
    )
    assert lines(rf"overall R@5={NUM} R@10={NUM} MRR={NUM} .*p95_ms={NUM} n=\d+", out), out
    result = json.loads((tmp_path / "retrieval.json").read_text())
    assert result["dataset"] == "longmemeval via mcp on postgresql"


@NEEDS_DATA
def test_retrieval_ideas_cross_validates_every_idea_on_a_sample(tmp_path):
    out = bench(
        "retrieval_ideas.py",
        *("--locomo", LOCOMO, "--longmemeval", ORACLE, "--limit", 2, "--questions", 3),
        *("--out", tmp_path / "ideas.json"),
    )
    for idea in ("neighbours", "speaker names", "session", "second round"):
        assert lines(rf"{idea} +{RECALL} +{RECALL} \(.*\) +{RECALL} +{RECALL} \(.*\)  (?:yes|no)", out), out
    for dataset in ("LoCoMo", "LongMemEval_S"):
        assert lines(rf"  {dataset} +R@5 {RECALL}  R@10 {RECALL} \(folds .*\).*", out), out
    assert set(json.loads((tmp_path / "ideas.json").read_text())["cross_validated"]) == {
        "LoCoMo",
        "LongMemEval_S",
    }


def test_backends_compares_sqlite_with_postgresql(tmp_path, request):
    # 100 pages through ingest, 200 through write_history; one server process per backend.
    out = bench(
        "backends.py",
        *("--sizes", "100,200", "--bulk-above", 150, "--samples", 5, "--seconds", 1, "--processes", 1),
        *("--db-url", postgres_url(request), "--out", tmp_path / "backends.json"),
    )
    for pages in (100, 200):
        for backend in ("sqlite", "postgresql"):
            assert lines(rf"\| {pages} \| {backend}( \| {NUM}){{5}} \|", out), out
    for backend in ("sqlite", "postgresql"):
        assert lines(rf"\| 1 \| {backend} \| {NUM} \| \d+ \|", out), out


def test_kept_logs_times_a_full_tool_call_log_against_an_empty_one(backend, request):
    on_postgres = (
        ["--backend", "postgresql", "--db-url", postgres_url(request)] if backend == "postgresql" else []
    )
    out = bench("kept_logs.py", "--rows", 2000, "--calls", 70, "--bound", 1000, *on_postgres)
    timing = rf"p50_ms={NUM} p95_ms={NUM} max_ms={NUM}"
    figures = (
        rf"kept_logs: backend={backend} rows=2000 bound=1000 calls=70 filled_s={NUM} full {timing} "
        rf"empty {timing} kept_calls=(\d+)"
    )
    assert lines(figures, out), out
    # The full namespace was cut back to its bound (and at most one check's worth of calls past it).
    assert 1000 <= int(re.search(figures, out).group(1)) < 1000 + 64, out
