"""`memvm import`: its command line. The formats are named by their registry (importers/registry.py),
which loads nothing; the readers, and the engine they write through, are imported only to run it,
by operations.py and memory_files.py."""

import argparse

from memvm.engine.operations.importers.registry import FORMAT_MODULES, MEMVM_EXPORT_NAME
from memvm.server.cli.parser import DB_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", help="the export, or - for standard input (markdown: a folder or .md file)"
    )
    parser.add_argument("--db", help=DB_HELP + "; created if missing")
    parser.add_argument(
        "--format",
        choices=list(FORMAT_MODULES),
        default=MEMVM_EXPORT_NAME,
        help="jsonl: memvm's own export; server-memory: the MCP memory server's memory.json; chatgpt, "
        "claude: their conversations.json; markdown: a folder of notes. All but jsonl add to the "
        "database, and importing twice adds nothing",
    )
    parser.add_argument(
        "--namespace", help="whose memory the imported pages join (not jsonl; default: default)"
    )


def run(args: argparse.Namespace) -> int:
    from memvm.server.cli.operations import run_operation

    return run_operation(args)
