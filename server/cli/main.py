"""`memvm`, the console script: find the command, parse its line, run it.

The host waits for `memvm hook` on every tool call, so what runs before a command is chosen is
the standard library and the table of commands (parser.py); each command then imports what it
uses, and the hook path never imports the MCP server.
"""

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from memvm.server.cli.parser import BY_NAME, parse

# What a shell reports for a program that a closed pipe ended (128 + SIGPIPE), as for `yes | head`.
EXIT_READER_GONE = 141


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    chosen = BY_NAME.get(given[0]) if given else None
    if chosen is not None and chosen.parses_itself:
        status: int = chosen.load().main(given[1:])
        if argv is None and chosen.ends_at_once:  # the program itself, not a caller in process
            _end_now(status)
        return status
    args = parse(given)
    # `memvm demo | head` or `memvm export | head`: the reader leaving early ends the command
    # quietly, as it ends any other program in a pipe, instead of with a traceback.
    try:
        status = _run(args)
        sys.stdout.flush()  # here, where a closed pipe can still be caught
    except BrokenPipeError:
        return _reader_gone()
    except BaseExceptionGroup as group:  # the demo's task groups wrap it
        if group.split(BrokenPipeError)[1] is not None:
            raise
        return _reader_gone()
    return status


def _run(args: argparse.Namespace) -> int:
    status: int = BY_NAME[args.command].load().run(args)
    return status


def _end_now(status: int) -> NoReturn:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        pass  # the host stopped reading: nothing more can reach it
    os._exit(status)


def _reader_gone() -> int:
    # Whatever is still buffered can go nowhere: point stdout at the null device, so that the
    # interpreter's last flush on the way out does not fail a second time.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
    return EXIT_READER_GONE
