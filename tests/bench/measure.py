"""Timing summaries and memory readings shared by the benchmark workers (standard library only)."""

import json
import resource
from pathlib import Path

# What the scale benchmark times, in order, with the same name in both systems' workers.
OPERATIONS = (
    "ingest (1 message)",
    "page_fault",
    "search_pages",
    "build_context",
    "bind_value",
    "check_ungrounded",
    "check_tool_call",
    "record_tool_outcome",
    "get_procedural_hints",
)


def rss_mb() -> float:
    """Resident set size now (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    """The process's high-water mark: each size runs in its own process, so it is that size's."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def summary(durations: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds, and serial throughput, of one operation's timings (seconds)."""
    ordered = sorted(durations)
    return {
        "p50_ms": ordered[len(ordered) // 2] * 1000,
        "p95_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000,
        "ops_per_s": len(ordered) / sum(ordered),
        "n": len(ordered),
    }


def write_report(report: object, out: str | None, name: str) -> Path:
    """Write a benchmark's JSON result to `out`, or to tests/bench/out/NAME, and say where."""
    path = Path(out or Path(__file__).parent / "out" / name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"written: {path}")
    return path
