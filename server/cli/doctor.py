"""`memvm doctor`: its command line. The checks (engine/operations/doctor.py, and the backend's
own in engine/storage/) are imported only to run them, by operations.py."""

import argparse

from memvm.server.cli.parser import DB_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=DB_HELP)
    parser.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    parser.add_argument(
        "--embedding-model",
        metavar="DIR",
        help="check the sentence encoder in this folder (default: $MEMVM_EMBEDDING_MODEL, else the installed one)",
    )


def run(args: argparse.Namespace) -> int:
    from memvm.server.cli.operations import run_operation

    return run_operation(args)
