"""Scale benchmark: memvm against chuk-ai-session-manager at 10k, 100k and 1M pages.

    .venv/bin/python tests/bench/scale.py [--sizes 10000,100000,1000000] [--samples 300]
                                          [--predecessor-max 1000000] [--out FILE]
    .venv/bin/python tests/bench/scale.py --install-predecessor

For each size, a fresh process fills memvm with that many pages of seeded synthetic conversation
(`synthetic.py`) through `ingest`, then times ingest of one message, page_fault, search_pages,
build_context (the developer message), bind_value, check_ungrounded, check_tool_call,
record_tool_outcome and get_procedural_hints (`scale_memvm.py`). Above `--bulk-above` pages the
same messages are written as past conversations (`write_history`: the same pages, in large
transactions, mapped into no working set), as ingest alone would take hours at a million; the
table says which. Another fresh process does the same on chuk-ai-session-manager 0.11.2
(`scale_predecessor.py`), installed from PyPI into a virtual environment this program creates
under ~/.cache/memvm-bench on first use (or with `--install-predecessor`, which does only that).
Each prints p50/p95 and serial ops/s per operation, the fill rate,
database size and peak RSS; the table gives the predecessor's p50 over memvm's per operation
(above 1: memvm is faster). JSON goes to --out and a plot beside it.
"""

import argparse
import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PREDECESSOR = "chuk-ai-session-manager==0.11.2"
PREDECESSOR_VENV = Path.home() / ".cache" / "memvm-bench" / PREDECESSOR.replace("==", "-")


PREDECESSOR_PYTHON = PREDECESSOR_VENV / "bin" / "python"


def predecessor_python() -> Path:
    """The predecessor's interpreter, creating its virtual environment on first use."""
    python = PREDECESSOR_PYTHON
    if not python.exists():
        print(f"creating {PREDECESSOR_VENV} with {PREDECESSOR}", file=sys.stderr)
        venv.create(PREDECESSOR_VENV, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PREDECESSOR], check=True)
    return python


def run_worker(command: list[str], timeout: float) -> dict[str, Any]:
    """One size on one system; a worker that fails or runs out of time is reported, not fatal."""
    try:
        done = subprocess.run(
            command, cwd=HERE, stdout=subprocess.PIPE, stderr=None, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": f"exited with {done.returncode}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def fmt_ms(op: dict[str, float] | None) -> str:
    return "—" if op is None else f"{op['p50_ms']:8.2f} / {op['p95_ms']:8.2f}"


def print_table(runs: list[dict[str, Any]]) -> None:
    print(
        f"\n{'pages':>9}  {'operation':<22} {'memvm p50 / p95 ms':>21} {'predecessor p50 / p95 ms':>26} {'ratio':>8}"
    )
    for run in runs:
        ours, theirs = run["memvm"], run.get("predecessor") or {}
        for name, op in ours["ops"].items():
            other = theirs.get("ops", {}).get(name)
            ratio = f"{other['p50_ms'] / op['p50_ms']:7.2f}x" if other else "—"
            print(f"{run['pages']:>9,}  {name:<22} {fmt_ms(op):>21} {fmt_ms(other):>26} {ratio:>8}")
        other_rate = theirs.get("ingest_pages_per_s")
        fill = "fill (pages/s)" if ours.get("fill") != "bulk" else "bulk fill (pages/s)"
        print(
            f"{run['pages']:>9,}  {fill:<22} {ours['ingest_pages_per_s']:>21,.0f} "
            f"{'—' if other_rate is None else f'{other_rate:,.0f}':>26}"
        )
        print(
            f"{run['pages']:>9,}  {'database (MB)':<22} {ours['db_bytes'] / 2**20:>21,.1f} {'in memory':>26}"
        )
        for key, label in (("rss_after_fill_mb", "RSS after fill (MB)"), ("peak_rss_mb", "peak RSS (MB)")):
            other_mb = theirs.get(key)
            print(
                f"{run['pages']:>9,}  {label:<22} {ours[key]:>21,.0f} "
                f"{'—' if other_mb is None else f'{other_mb:,.0f}':>26}"
            )
        if "error" in theirs:
            print(f"{run['pages']:>9,}  predecessor: {theirs['error']}")


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no plot", file=sys.stderr)
        return
    figure, (latency, memory) = plt.subplots(1, 2, figsize=(12, 4.5))
    sizes = [run["pages"] for run in runs]
    for op, colour in (
        ("search_pages", "tab:blue"),
        ("build_context", "tab:orange"),
        ("page_fault", "tab:green"),
    ):
        latency.plot(
            sizes,
            [run["memvm"]["ops"][op]["p50_ms"] for run in runs],
            "o-",
            color=colour,
            label=f"memvm {op}",
        )
        theirs = [
            (run["pages"], run["predecessor"]["ops"][op]["p50_ms"])
            for run in runs
            if "ops" in run.get("predecessor", {})
        ]
        if theirs:
            latency.plot(*zip(*theirs, strict=True), "x--", color=colour, label=f"predecessor {op}")
    latency.set(xscale="log", yscale="log", xlabel="pages", ylabel="p50 ms", title="Latency as pages grow")
    latency.legend(fontsize=7)
    memory.plot(sizes, [run["memvm"]["peak_rss_mb"] for run in runs], "o-", label="memvm")
    theirs = [
        (run["pages"], run["predecessor"]["peak_rss_mb"])
        for run in runs
        if "ops" in run.get("predecessor", {})
    ]
    if theirs:
        memory.plot(*zip(*theirs, strict=True), "x--", label="predecessor")
    memory.set(xscale="log", xlabel="pages", ylabel="peak RSS (MB)", title="Memory as pages grow")
    memory.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"plot: {path}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated page counts")
    parser.add_argument("--samples", type=int, default=300, help="timed calls per operation")
    parser.add_argument("--predecessor-max", type=int, default=1_000_000, help="largest size to run it at")
    parser.add_argument(
        "--bulk-above",
        type=int,
        default=100_000,
        help="larger sizes fill memvm through write_history, not ingest",
    )
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="seconds per worker")
    parser.add_argument(
        "--db-url",
        help="run memvm on PostgreSQL: a server's URL (a fresh database per size), or 'auto' for a throwaway one",
    )
    parser.add_argument("--out", type=Path, default=HERE / "out" / "scale.json")
    parser.add_argument(
        "--install-predecessor", action="store_true", help="create the predecessor's environment and exit"
    )
    options = parser.parse_args()
    if options.install_predecessor:
        print(predecessor_python())
        return
    sizes = [int(size) for size in options.sizes.split(",")]
    runs = []
    for pages in sizes:
        print(f"{pages:,} pages", file=sys.stderr)
        common = ["--pages", str(pages), "--samples", str(options.samples)]
        run: dict[str, Any] = {"pages": pages}
        bulk = ["--bulk"] if pages > options.bulk_above else []
        backend = ["--db-url", options.db_url] if options.db_url else []
        run["memvm"] = run_worker(
            [sys.executable, "scale_memvm.py", *common, *bulk, *backend], options.timeout
        )
        if "error" in run["memvm"]:
            sys.exit(f"memvm failed at {pages:,} pages: {run['memvm']['error']}")
        if pages <= options.predecessor_max:
            python = predecessor_python()
            run["predecessor"] = run_worker([str(python), "scale_predecessor.py", *common], options.timeout)
        runs.append(run)
        # Saved after every size: a long run that is stopped keeps what it measured.
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(json.dumps({"runs": runs}, indent=2))
    print_table(runs)
    plot(runs, options.out.with_suffix(".png"))
    last = runs[-1]["memvm"]
    print(
        f"scale pages={runs[-1]['pages']} search_p50_ms={last['ops']['search_pages']['p50_ms']:.2f} "
        f"fault_p50_ms={last['ops']['page_fault']['p50_ms']:.2f} peak_rss_mb={last['peak_rss_mb']:.0f}"
    )


if __name__ == "__main__":
    main()
