"""How long the host waits for `memvm hook claude-code`: the whole process (start, answer, exit)
for PreToolUse and UserPromptSubmit, beside a bare `python -c pass` timed in the same run.

    .venv/bin/python tests/bench/hook_latency.py [--runs 21]

Prints the median and the 90th percentile of each, and the hook's median in bare starts.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MEMVM = Path(sys.executable).with_name("memvm")


def _event(name: str, run: int, **fields: object) -> bytes:
    common = {"session_id": "bench", "cwd": "/tmp", "hook_event_name": name}
    return json.dumps({**common, **fields, "tool_use_id": f"toolu_{run}"}).encode()


def _timed(command: list[str], stdin: bytes) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        hook = [str(MEMVM), "hook", "claude-code", "--db", str(Path(folder) / "bench.db")]
        # The first run creates and migrates the file: not what a host waits for afterwards.
        _timed(hook, _event("UserPromptSubmit", 0, prompt="warm up"))
        times: dict[str, list[float]] = {"python -c pass": [], "PreToolUse": [], "UserPromptSubmit": []}
        for run in range(runs):
            times["python -c pass"].append(_timed([sys.executable, "-c", "pass"], b""))
            pre = _event("PreToolUse", run, tool_name="Bash", tool_input={"command": f"ls {run}"})
            times["PreToolUse"].append(_timed(hook, pre))
            prompt = _event("UserPromptSubmit", run, prompt=f"how do we deploy release {run}?")
            times["UserPromptSubmit"].append(_timed(hook, prompt))
    bare = statistics.median(times["python -c pass"])
    for name, seconds in times.items():
        median = statistics.median(seconds)
        p90 = statistics.quantiles(seconds, n=10)[-1]
        print(
            f"{name:18} median {median * 1000:6.0f} ms  p90 {p90 * 1000:6.0f} ms  ({median / bare:.1f} bare starts)"
        )


if __name__ == "__main__":
    main()
