"""How long the host waits for `memvm hook claude-code`: the whole process (start, answer, exit)
for PreToolUse and UserPromptSubmit, beside a bare `python -c pass` timed in the same run.

    .venv/bin/python tests/bench/hook_latency.py [--runs 21]

Two ways are timed: the usual one, where a background process keeps the database open and each
hook process hands it the event, and `--background-idle 0`, where every event is answered in
its own process (the engine's imports and open included). Prints the median and the 90th
percentile of each, and the median in bare starts.
"""

import argparse
import contextlib
import json
import os
import signal
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


def _timed(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def _wait_for_socket(folder: Path) -> None:
    deadline = time.monotonic() + 30
    while not list(folder.glob("*.sock")):
        if time.monotonic() > deadline:
            raise SystemExit("the background process did not start")
        time.sleep(0.05)


def _stop_background(folder: Path) -> None:
    for lock in folder.glob("*.lock"):
        text = lock.read_text().strip()
        if text.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(text), signal.SIGTERM)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    # A short folder of its own: Unix socket paths are short, and the run leaves nothing behind.
    with tempfile.TemporaryDirectory(prefix="mvb") as folder:
        runtime = Path(folder) / "run"
        env = {**os.environ, "MEMVM_RUNTIME_DIR": str(runtime)}
        db = str(Path(folder) / "bench.db")
        ways = {
            "background": [str(MEMVM), "hook", "claude-code", "--db", db],
            "own process": [str(MEMVM), "hook", "claude-code", "--db", db, "--background-idle", "0"],
        }
        try:
            # The first run creates and migrates the file and starts the background process:
            # not what a host waits for afterwards.
            _timed(ways["background"], _event("UserPromptSubmit", 0, prompt="warm up"), env)
            _wait_for_socket(runtime)
            times: dict[str, list[float]] = {"python -c pass": []}
            for run in range(runs):
                times["python -c pass"].append(_timed([sys.executable, "-c", "pass"], b"", env))
                for way, hook in ways.items():
                    pre = _event(
                        "PreToolUse", run, tool_name="Bash", tool_input={"command": f"ls {way} {run}"}
                    )
                    times.setdefault(f"PreToolUse, {way}", []).append(_timed(hook, pre, env))
                    prompt = _event(
                        "UserPromptSubmit", run, prompt=f"how do we deploy release {run} ({way})?"
                    )
                    times.setdefault(f"UserPromptSubmit, {way}", []).append(_timed(hook, prompt, env))
        finally:
            _stop_background(runtime)
    bare = statistics.median(times["python -c pass"])
    for name, seconds in times.items():
        median = statistics.median(seconds)
        p90 = statistics.quantiles(seconds, n=10)[-1]
        print(
            f"{name:30} median {median * 1000:6.0f} ms  p90 {p90 * 1000:6.0f} ms  ({median / bare:.1f} bare starts)"
        )


if __name__ == "__main__":
    main()
