"""`memvm serve`: its command line. What it runs (settings, the checks before serving, the MCP
server) is in serve_start.py, imported only to serve: `memvm serve --help` loads the settings'
models for their choices and defaults, not the MCP SDK."""

import argparse

from memvm.engine.config import EngineConfig, Synchronous
from memvm.engine.guard_config import GuardPreset
from memvm.engine.paging.tokens import SUPPORTED_ENCODINGS
from memvm.server.cli.search_flags import add_search_arguments
from memvm.server.settings import ToolProfile, Transport


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--transport",
        choices=[t.value for t in Transport],
        default=Transport.STDIO.value,
        help="how clients connect",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="HTTP only: address to listen on (loopback by default)"
    )
    serve.add_argument("--port", type=int, default=8000, help="HTTP only: port to listen on")
    serve.add_argument(
        "--tokens",
        metavar="FILE",
        help="HTTP only: JSON object of bearer token -> namespace; required to listen beyond loopback",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="HTTP only: another Host header to accept (the name clients use); DNS-rebinding protection stays on",
    )
    serve.add_argument(
        "--db",
        help="SQLite file, or postgresql://user@host:port/dbname (default: $MEMVM_DB, else a file in "
        "the per-user data directory); ':memory:' for a throwaway run",
    )
    serve.add_argument("--namespace", default="default", help="whose memory this process serves")
    serve.add_argument(
        "--session",
        help="the session used when a tool names none (default: 'default', or the project's own)",
    )
    serve.add_argument(
        "--project",
        metavar="DIR",
        help="keep DIR's project memory apart (its git work tree, else DIR): what is written here is "
        "recalled only here, beside the notes kept for every project; as the hooks do in DIR",
    )
    serve.add_argument(
        "--tools",
        choices=[p.value for p in ToolProfile],
        default=ToolProfile.MODEL.value,
        help="model: paging, search, remember; all: plus host tools (ingest, turns, pins, context)",
    )
    defaults = EngineConfig()
    serve.add_argument(
        "--budget-tokens",
        type=int,
        default=defaults.budget_tokens,
        help="tokens the rules, manifest and packed context may take together",
    )
    serve.add_argument("--max-faults-per-turn", type=int, default=defaults.max_faults_per_turn)
    serve.add_argument(
        "--turn-idle-seconds",
        type=float,
        default=defaults.turn_idle_seconds,
        help="a call after this long without one starts a new turn",
    )
    serve.add_argument("--encoding", choices=SUPPORTED_ENCODINGS, default=defaults.encoding)
    serve.add_argument(
        "--synchronous",
        choices=[s.value for s in Synchronous],
        default=Synchronous.FULL.value,
        help="FULL survives power loss; NORMAL is faster and may lose the last writes on power loss",
    )
    serve.add_argument(
        "--max-db-mb",
        type=int,
        help="cap the database file and its WAL together at this many MiB: past it, writes get a "
        "'storage full' tool error; applies to this process's writes",
    )
    serve.add_argument(
        "--max-namespace-mb",
        type=int,
        help="cap each namespace's page text at this many MB of characters: a namespace past it gets "
        "a 'size limit' tool error on writes while the others write on; on either backend",
    )
    serve.add_argument(
        "--read-only",
        action="store_true",
        help="open the database read-only: reads work, writes get a 'read-only' tool error",
    )
    serve.add_argument(
        "--keep-secrets",
        action="store_true",
        help="store secret-shaped strings (API keys, tokens, private keys, passwords in URLs) as "
        "given instead of as [REDACTED:kind]",
    )
    serve.add_argument(
        "--guards",
        choices=[p.value for p in GuardPreset],
        default=GuardPreset.DEFAULT.value,
        help="how hard the tool-call guards are: budgets, caps, loop windows, warnings before a block",
    )
    serve.add_argument(
        "--guard-config",
        metavar="FILE",
        help="JSON object of guard settings that override the preset (e.g. polling_tools, tool_caps)",
    )
    add_search_arguments(serve)
    serve.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def run(args: argparse.Namespace) -> int:
    from memvm.server.cli.serve_start import serve

    return serve(args)
