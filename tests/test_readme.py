"""What the README and docs/reference.md promise about settings holds for the code."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from memvm.engine.guard_config import GuardConfig, GuardPreset, load_guard_config

README_PATH = Path(__file__).parent.parent / "README.md"
README = README_PATH.read_text(encoding="utf-8")
REFERENCE = (README_PATH.parent / "docs" / "reference.md").read_text(encoding="utf-8")


def test_the_guard_config_example_is_a_valid_override(tmp_path):
    (example,) = [
        block for block in re.findall(r"```json\n(.*?)```", REFERENCE, re.S) if "polling_tools" in block
    ]
    settings = tmp_path / "guards.json"
    settings.write_text(example)
    config = load_guard_config("default", str(settings))
    assert "job_status" in config.polling_tools and config.cap_for("send_email") == 1


def test_the_preset_table_matches_the_presets():
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:5]]
        for line in REFERENCE.splitlines()
        if line.startswith("| `") and line.count("|") == 5
    }
    presets = [GuardConfig.preset(preset) for preset in GuardPreset]
    assert rows["`grace` (warnings before a block)"] == [str(p.grace) for p in presets]
    assert rows["`runaway_repeats`"] == [str(p.runaway_repeats) for p in presets]
    budgets = rows["`discovery_budget` / `execution_budget` per turn"]
    assert budgets == [f"{p.discovery_budget} / {p.execution_budget}" for p in presets]
    loops = rows["`loop_window` / `loop_max_calls`"]
    assert loops == [f"{p.loop_window} / {p.loop_max_calls}" for p in presets]


@pytest.mark.slow
def test_the_agent_loop_example_runs_as_written(tmp_path):
    (example,) = [
        block for block in re.findall(r"```python\n(.*?)```", REFERENCE, re.S) if "anyio.run(main)" in block
    ]
    script = tmp_path / "agent_loop.py"
    script.write_text(example, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.fullmatch(r"verdict allow; developer message of \d+ tokens\n", done.stdout)
    assert (tmp_path / "agent.db").exists()


def test_the_vscode_example_names_the_same_command_as_the_desktop_example():
    (vscode,) = [block for block in re.findall(r"```json\n(.*?)```", README, re.S) if '"servers"' in block]
    desktop = json.loads(
        (README_PATH.parent / "claude_desktop_config.example.json").read_text(encoding="utf-8")
    )
    server = json.loads(vscode)["servers"]["memvm"]
    assert server["type"] == "stdio"
    assert server["command"] == desktop["mcpServers"]["memvm"]["command"]


def test_ci_runs_each_test_command_of_the_readme_verbatim():
    commands = [
        line
        for block in re.findall(r"```sh\n(.*?)```", README, re.S)
        for line in block.splitlines()
        if "-m pytest" in line
    ]
    ci = (README_PATH.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert len(commands) == 2  # the fast stage, then the end-to-end stage
    assert all(any(line.startswith(command) for line in ci.splitlines()) for command in commands)
