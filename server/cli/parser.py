"""The `memvm` command line: every command by name and help, each one's arguments in its own module.

Nothing here imports a command: `memvm --help` lists them all from this table, and a command's
module (its arguments, and what runs it) is imported only once it is the one asked for. So the
help of one command costs that command's imports and no other's, and none costs the MCP SDK,
which only `serve` and `demo` load, when they run.
"""

import argparse
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

DB_HELP = (
    "SQLite file, or postgresql://user@host:port/dbname (default: $MEMVM_DB, else a file in the "
    "per-user data directory)"
)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    # The module that defines the command: `add_arguments(parser)` and `run(args) -> int`, or,
    # for a command that parses its own line, `main(argv) -> int`.
    module: str
    # Its own parser, given the rest of the line as it is: the hooks' (a hook answers the host,
    # whatever it was given, and never exits 2, which the host reads as a block).
    parses_itself: bool = False
    # Once it has answered, the process ends without the interpreter's teardown (freeing hundreds
    # of modules, a tenth of the run): the host waits for the exit, and everything it wrote is
    # committed and closed by then.
    ends_at_once: bool = False

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


COMMANDS = (
    Command("serve", "run the MCP server (stdio, or HTTP for several agents)", "memvm.server.cli.serve"),
    Command(
        "ui",
        "serve the browser view of a database on loopback and print its URL (with its token)",
        "memvm.server.cli.ui",
    ),
    Command("demo", "start the server and drive it through a real MCP client", "memvm.server.cli.demo"),
    Command(
        "hook",
        "handle one agent-host hook event (JSON on stdin, the host's answer on stdout)",
        "memvm.hooks.client",
        parses_itself=True,
        ends_at_once=True,
    ),
    Command(
        "hooks",
        "install memvm as a host's hook: memvm hooks install HOST",
        "memvm.hooks.install_cli",
        parses_itself=True,
    ),
    Command(
        "doctor",
        "check a database: integrity, search index, versions, sizes, WAL (safe while serving)",
        "memvm.server.cli.doctor",
    ),
    Command(
        "export",
        "write the memory as JSON lines, one row each (safe while serving)",
        "memvm.server.cli.export",
    ),
    Command(
        "import",
        "load memvm's export into a database that holds no memory yet, all or nothing; or add "
        "memory from another tool's files (--format)",
        "memvm.server.cli.import_",
    ),
    Command(
        "embed",
        "give every page still waiting its vector for search by meaning, now (safe while serving)",
        "memvm.server.cli.embed",
    ),
    Command(
        "gc",
        "delete the pages whose expiry has come, in every namespace (safe while serving)",
        "memvm.server.cli.gc",
    ),
    Command(
        "backup",
        "copy a database to a new file, consistently, while servers write to it",
        "memvm.server.cli.backup",
    ),
)
BY_NAME = {command.name: command for command in COMMANDS}


def parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for `memvm ARGV`: every command listed, and the arguments of the one ARGV names."""
    top = argparse.ArgumentParser(prog="memvm", description="Paged memory for AI agents, as an MCP server.")
    commands = top.add_subparsers(dest="command", required=True)
    chosen = BY_NAME.get(argv[0]) if argv else None
    for command in COMMANDS:
        # One that parses its own line is listed only: `memvm hook --help` is its own parser's.
        sub = commands.add_parser(command.name, help=command.help, add_help=not command.parses_itself)
        if command is chosen and not command.parses_itself:
            command.load().add_arguments(sub)
    return top


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """`memvm ARGV` parsed; argparse exits (2, with its usage) on a line it cannot take."""
    return parser(argv).parse_args(argv)
