"""The command line is built without importing what the commands run: `memvm --help` and each
command's `--help` load neither the MCP SDK nor the HTTP stack (the modules loaded are checked in a
fresh interpreter, since what this test process already imported says nothing)."""

import json
import subprocess
import sys

import pytest
from memvm.server.cli.parser import COMMANDS, parse

from tests.commands import ENTRY_MODULES, run

HEAVY = ("mcp", "mcp_types", "starlette", "uvicorn")


def loaded_by(*argv: str) -> list[str]:
    """The modules `memvm ARGV` has imported when it returns or exits, in a new interpreter."""
    script = (
        "import contextlib, io, json, sys\n"
        "from memvm.server.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({list(argv)!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(done.stdout))


def test_memvm_help_imports_no_command_and_no_mcp():
    loaded = loaded_by("--help")
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []
    assert [m for m in loaded if m.startswith("memvm.server") and m not in ENTRY_MODULES] == []


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_the_help_of_each_command_imports_neither_mcp_nor_the_http_stack(command):
    loaded = loaded_by(command.name, "--help")
    assert command.module in loaded
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []


def test_memvm_help_lists_every_command():
    done = run("--help")
    assert done.status == 0
    assert "{" + ",".join(c.name for c in COMMANDS) + "}" in done.stdout


def test_only_the_chosen_command_has_its_arguments_read():
    args = parse(["export", "--format", "markdown", "--out", "notes"])
    assert (args.command, args.format, args.out) == ("export", "markdown", "notes")
    # Its arguments are its own: another command's are refused, as a mistyped one is.
    with pytest.raises(SystemExit) as refused:
        parse(["gc", "--out", "notes"])
    assert refused.value.code == 2
