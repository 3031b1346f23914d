"""`memvm export`: its command line. The export itself is imported only to run it, by
operations.py (memvm's JSON lines) or memory_files.py (markdown)."""

import argparse

from memvm.server.cli.parser import DB_HELP

FORMATS = ("jsonl", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=DB_HELP)
    parser.add_argument(
        "--out", metavar="FILE", help="where to write (default: standard output); an existing file is kept"
    )
    parser.add_argument("--force", action="store_true", help="replace the --out file if it exists")
    parser.add_argument(
        "--namespace", help="only this namespace's memory (markdown: default, the namespace serve uses)"
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="jsonl",
        help="jsonl: every row, for memvm import; markdown: a folder (--out DIR) of session "
        "transcripts and notes with their keys",
    )


def run(args: argparse.Namespace) -> int:
    from memvm.server.cli.operations import run_operation

    return run_operation(args)
