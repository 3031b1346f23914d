"""`memvm ui`: its command line. The view itself (ui/cli.py, with starlette and uvicorn under
it) is imported only to serve it."""

import argparse

from memvm.server.cli.parser import DB_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=DB_HELP)
    parser.add_argument("--namespace", default="default", help="whose memory to show (as for memvm serve)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="open the database read-only (to look at a copy, or a file on read-only media): nothing can be curated",
    )


def run(args: argparse.Namespace) -> int:
    from memvm.ui.cli import main

    return main(args)
