"""The hosts' registry: each host one object, named as it is on disk, and light to load."""

import json
import subprocess
import sys

import pytest
from memvm.hooks.arguments import HookUsageError, hook_parser
from memvm.hooks.events import EventKind
from memvm.hooks.hosts import HOSTS
from memvm.hooks.install import answered_events


def test_the_hosts_keep_the_names_settings_files_and_databases_hold():
    assert list(HOSTS) == ["claude-code", "gemini-cli"]
    assert all(name == spec.name for name, spec in HOSTS.items())


@pytest.mark.parametrize("host", list(HOSTS))
def test_a_host_is_asked_for_every_event_memvm_answers_and_starts_with_the_session(host):
    spec = HOSTS[host]
    asked = answered_events(spec)
    assert spec.protocol.kinds[asked[0]] is EventKind.SESSION_START
    needed = {EventKind.SESSION_START, EventKind.PROMPT, EventKind.PRE_TOOL, EventKind.TOOL_DONE}
    assert needed <= {spec.protocol.kinds[name] for name in asked}
    assert set(spec.settings.timeouts) <= set(asked)


@pytest.mark.parametrize("host", list(HOSTS))
def test_a_hosts_editing_tools_are_among_its_workspace_tools(host):
    spec = HOSTS[host]
    assert spec.protocol.editing_tools <= spec.protocol.workspace_tools


def test_the_hook_command_line_takes_exactly_the_registered_hosts():
    parser = hook_parser()
    for host in HOSTS:
        assert parser.parse_args([host]).host == host
    with pytest.raises(HookUsageError, match="invalid choice"):
        parser.parse_args(["codex"])


def test_loading_every_host_loads_neither_pydantic_nor_the_engine_nor_mcp():
    # The hook's client reads its command line, and so loads every host, on each tool call.
    script = (
        "import sys, json\n"
        "import memvm.hooks.hosts\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'mcp', 'aiosqlite')"
        " or m in ('memvm.engine.engine', 'memvm.engine.config'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []
