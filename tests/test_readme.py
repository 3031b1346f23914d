"""What the README promises about settings holds for the code."""

import json
import re
from pathlib import Path

from memvm.engine.guard_config import GuardConfig, GuardPreset

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def test_the_guard_config_example_is_a_valid_override():
    (example,) = [
        block for block in re.findall(r"```json\n(.*?)```", README, re.S) if "polling_tools" in block
    ]
    config = GuardConfig.model_validate({**GuardConfig().model_dump(), **json.loads(example)})
    assert "job_status" in config.polling_tools and config.cap_for("send_email") == 1


def test_the_preset_table_matches_the_presets():
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:5]]
        for line in README.splitlines()
        if line.startswith("| `") and line.count("|") == 5
    }
    presets = [GuardConfig.preset(preset) for preset in GuardPreset]
    assert rows["`grace` (warnings before a block)"] == [str(p.grace) for p in presets]
    assert rows["`runaway_repeats`"] == [str(p.runaway_repeats) for p in presets]
    budgets = rows["`discovery_budget` / `execution_budget` per turn"]
    assert budgets == [f"{p.discovery_budget} / {p.execution_budget}" for p in presets]
    loops = rows["`loop_window` / `loop_max_calls`"]
    assert loops == [f"{p.loop_window} / {p.loop_max_calls}" for p in presets]
