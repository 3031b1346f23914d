"""`memvm demo`: its command line. The demo (server/demo.py, an MCP client driving the real
server) is imported only to run it."""

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="SQLite file to use (default: a new temporary one)")


def run(args: argparse.Namespace) -> int:
    from memvm.server.demo import run_demo

    return run_demo(args.db)
