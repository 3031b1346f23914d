"""A pre-tool event answered in its own process imports only what a guard check needs: not
pydantic, paging or recall, which were most of such a process's start (tests/bench/cli_start.py)."""

import json
import os
import subprocess
import sys

import pytest

from tests.hooks import claude_code_events as cc

pytestmark = pytest.mark.slow

# Runs `memvm hook` as the program does, then says which of these it had imported.
_ANSWER_AND_LIST = """
import sys
from memvm.hooks.client import main
main(sys.argv[1:])
heavy = ("pydantic", "memvm.engine.paging.memory", "memvm.engine.scope", "memvm.hooks.recall")
print(sorted(name for name in heavy if name in sys.modules))
"""


def answered_in_own_process(tmp_path, event) -> tuple[str, str]:
    """The answer `memvm hook claude-code` printed for `event`, and the heavy modules it imported."""
    command = [sys.executable, "-c", _ANSWER_AND_LIST, "claude-code", "--db", str(tmp_path / "m.db")]
    env = {**os.environ, "MEMVM_RUNTIME_DIR": str(tmp_path / "run")}
    done = subprocess.run(
        [*command, "--background-idle", "0"],
        input=json.dumps(event).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
    )
    answer, imported = done.stdout.decode().splitlines()
    return answer, imported


def test_a_pre_tool_answer_in_its_own_process_imports_no_pydantic_paging_or_recall(tmp_path):
    answer, imported = answered_in_own_process(tmp_path, cc.pre_tool({"command": "ls"}, "toolu_1"))
    assert json.loads(answer) == {}
    assert imported == "[]"


def test_a_prompt_in_its_own_process_still_recalls(tmp_path):
    # The other events import what they use when they come: the same process, a prompt instead.
    _, imported = answered_in_own_process(tmp_path, cc.prompt("what did we decide about the release?"))
    assert "memvm.hooks.recall" in imported and "pydantic" in imported
