"""How long `memvm` takes to start: `--help` of the program and of some of its commands, and a
hook event answered in its own process, each beside a bare `python -c pass` timed in the same run.

    .venv/bin/python tests/bench/cli_start.py [--runs 21]

A help text needs none of what its command runs with (the MCP SDK, the HTTP stack, the engine),
so these times are mostly imports: what a command imports before it knows what it was asked.
The hook is answered with `--background-idle 0`, as the first event for a database is: the engine
imported, the database opened, one PreToolUse event checked, the answer printed.

Each item runs once per round, in turn, so a machine busy with something else slows them alike.
Prints one line per item: the median, and the median in bare starts.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
MEMVM = str(Path(PYTHON).with_name("memvm"))
HELPS = ("serve", "ui", "doctor", "export", "import", "hooks")


def _timed(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def _pre_tool_use(run: int) -> bytes:
    event = {
        "session_id": "bench",
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"ls {run}"},
        "tool_use_id": f"toolu_{run}",
    }
    return json.dumps(event).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="mvc") as folder:
        env = {**os.environ, "MEMVM_RUNTIME_DIR": str(Path(folder) / "run")}
        hook = [
            MEMVM,
            "hook",
            "claude-code",
            "--db",
            str(Path(folder) / "bench.db"),
            "--background-idle",
            "0",
        ]
        items: dict[str, list[str]] = {
            "python -c pass": [PYTHON, "-c", "pass"],
            "python -m memvm.server --help": [PYTHON, "-m", "memvm.server", "--help"],
            "memvm --help": [MEMVM, "--help"],
            **{f"memvm {name} --help": [MEMVM, name, "--help"] for name in HELPS},
            "memvm hook, own process": hook,
        }
        # The first event creates and migrates the file: not what a host waits for afterwards.
        _timed(hook, _pre_tool_use(0), env)
        times: dict[str, list[float]] = {name: [] for name in items}
        for run in range(1, runs + 1):
            for name, command in items.items():
                stdin = _pre_tool_use(run) if command is hook else b""
                times[name].append(_timed(command, stdin, env))
    bare = statistics.median(times["python -c pass"])
    for name, seconds in times.items():
        median = statistics.median(seconds)
        print(f"{name:32} median {median * 1000:6.0f} ms  ({median / bare:4.1f} bare starts)")


if __name__ == "__main__":
    main()
