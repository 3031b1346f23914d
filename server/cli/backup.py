"""`memvm backup`: its command line. The copy (the backend's own: engine/storage/sqlite_backup.py)
is imported only to run it, by operations.py."""

import argparse

from memvm.server.cli.parser import DB_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="FILE", help="the new file to write (never an existing one, nor over FILE.partial)"
    )
    parser.add_argument("--db", help=DB_HELP)


def run(args: argparse.Namespace) -> int:
    from memvm.server.cli.operations import run_operation

    return run_operation(args)
