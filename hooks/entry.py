"""The `memvm` command: `memvm hook` and `memvm hooks` start without the MCP server; every other
command is the server's.

The host waits for a hook on every tool call, and importing the server (and the MCP SDK) costs
about a second, so the hook path is chosen before anything of the server is imported.
"""

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        from memvm.hooks.client import main as hook

        return hook(args[1:])
    if args[:1] == ["hooks"]:
        from memvm.hooks.install_cli import main as hooks

        return hooks(args[1:])
    from memvm.server.cli import main as serve  # the one place hooks/ reaches above itself

    return serve(args)
