"""The `memvm` command: serve, run the demo, and the operator's commands (see cli_ops)."""

import argparse
import os
import shutil
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.config import Synchronous
from memvm.engine.errors import (
    DatabaseRefused,
    StorageBusy,
    StorageError,
    StorageFull,
    StorageReadOnly,
)
from memvm.engine.guard_config import GuardConfig, GuardConfigError, GuardPreset, load_guard_config
from memvm.engine.paging.projects import project_session, work_tree
from memvm.engine.paging.tokens import SUPPORTED_ENCODINGS
from memvm.engine.paths import DatabasePathError, check_db_path, database_named
from memvm.engine.storage.open import is_postgres_url, shown
from memvm.hooks.arguments import add_arguments as add_hook_arguments
from memvm.server.cli_ops import add_operations, run_operation
from memvm.server.http import Transport, is_loopback
from memvm.server.settings import ServerSettings, ToolProfile
from memvm.server.tokens import TokenFileError, load_tokens
from memvm.ui.cli import add_arguments as add_ui_arguments
from pydantic import ValidationError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memvm", description="Paged memory for AI agents, as an MCP server."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the MCP server (stdio, or HTTP for several agents)")
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
    serve.add_argument(
        "--budget-tokens",
        type=int,
        default=EngineConfig().budget_tokens,
        help="tokens the rules, manifest and packed context may take together",
    )
    serve.add_argument("--max-faults-per-turn", type=int, default=EngineConfig().max_faults_per_turn)
    serve.add_argument(
        "--turn-idle-seconds",
        type=float,
        default=EngineConfig().turn_idle_seconds,
        help="a call after this long without one starts a new turn",
    )
    serve.add_argument("--encoding", choices=SUPPORTED_ENCODINGS, default=EngineConfig().encoding)
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
    serve.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    ui = commands.add_parser(
        "ui", help="serve the browser view of a database on loopback and print its URL (with its token)"
    )
    add_ui_arguments(ui)
    demo = commands.add_parser("demo", help="start the server and drive it through a real MCP client")
    demo.add_argument("--db", help="SQLite file to use (default: a new temporary one)")
    hook = commands.add_parser(
        "hook", help="handle one agent-host hook event (JSON on stdin, the host's answer on stdout)"
    )
    add_hook_arguments(hook)
    # Listed for --help; `memvm hooks ...` is parsed by the hooks package (see main).
    commands.add_parser(
        "hooks", help="install memvm as a host's hook: memvm hooks install HOST", add_help=False
    )
    add_operations(commands)
    return parser


class SettingsError(Exception):
    """A setting from the command line or a settings file that cannot be used."""


def _guards(args: argparse.Namespace) -> GuardConfig:
    try:
        return load_guard_config(args.guards, args.guard_config)
    except GuardConfigError as exc:
        raise SettingsError(str(exc)) from exc


def _settings(args: argparse.Namespace) -> ServerSettings:
    project = _project(args.project)
    db = database_named(args.db)
    if db != ":memory:" and not is_postgres_url(db):
        try:
            check_db_path(Path(db), create_folder=True)
        except DatabasePathError as exc:
            raise SettingsError(str(exc)) from exc
    return ServerSettings(
        db=db,
        namespace=args.namespace,
        session=args.session or (project_session(project) if project else "default"),
        project=project,
        tools=ToolProfile(args.tools),
        engine=_room_for_pages(
            EngineConfig(
                encoding=args.encoding,
                budget_tokens=args.budget_tokens,
                max_faults_per_turn=args.max_faults_per_turn,
                turn_idle_seconds=args.turn_idle_seconds,
                synchronous=Synchronous(args.synchronous),
                max_db_mb=args.max_db_mb,
                max_namespace_mb=args.max_namespace_mb,
                read_only=args.read_only,
                redact_secrets=not args.keep_secrets,
                guards=_guards(args),
            )
        ),
        tokens=load_tokens(args.tokens) if args.tokens else None,
    )


def _project(directory: str | None) -> str | None:
    if directory is None:
        return None
    if not Path(directory).expanduser().is_dir():
        raise SettingsError(f"--project {directory}: no such directory; give the project's folder")
    return work_tree(directory)


def _room_for_pages(config: EngineConfig) -> EngineConfig:
    """`config`, refused (ValidationError) if its budget leaves no room for a page beside the reserve.

    Counting the reserve needs the encoding, a few tenths of a second: only a small budget waits
    for it; any other is known to be enough.
    """
    from memvm.resources.budget import surely_enough, with_reserve

    if not surely_enough(config):
        with_reserve(config)
    return config


# The tool errors speak to a model mid-call; at start the person running memvm reads this instead.
_START_PROBLEMS = {
    StorageBusy: "another process held its write lock past the busy timeout (a migration?); start again",
    StorageFull: "the disk is full; free space and start again",
    StorageReadOnly: "the file or its folder is read-only; use --read-only to serve it as it is",
}


def _start_problem(exc: StorageError, settings: ServerSettings) -> str:
    # A file over its cap opens and serves reads; only a schema upgrade that needs room stops it,
    # and then, while the disk has room, the cap is what to change.
    cap = settings.engine.max_db_mb
    if isinstance(exc, StorageFull) and cap is not None and _disk_has_room(settings.db):
        return (
            f"it has no room left under --max-db-mb {cap} for this memvm's schema upgrade; "
            "start once with a larger --max-db-mb"
        )
    return _START_PROBLEMS[type(exc)]


def _disk_has_room(db: str) -> bool:
    try:
        return shutil.disk_usage(os.path.dirname(os.path.abspath(db))).free >= 2**20
    except OSError:
        return False


async def _check_database(settings: ServerSettings) -> None:
    """Open and migrate once before serving, so a bad file is refused before any client waits."""
    engine = await Engine.open(settings.db, settings.engine)
    await engine.close()


def _check_listening(args: argparse.Namespace) -> None:
    """Refuse what would expose the memory: tokens over stdio mean nothing, open binds need them."""
    if Transport(args.transport) is Transport.STDIO:
        if args.tokens:
            raise SettingsError(
                "--tokens applies to the HTTP transports; over stdio the namespace is --namespace"
            )
        return
    if not args.tokens and not is_loopback(args.host):
        raise SettingsError(
            f"refusing to listen on {args.host} without --tokens: anyone who can reach it could read this memory"
        )


def _invalid_settings(exc: ValidationError) -> str:
    """One line for settings that do not validate: the fields at fault, or what a whole-settings
    check says (a budget with no room for pages)."""
    whole = [str(e["msg"]).removeprefix("Value error, ") for e in exc.errors() if not e["loc"]]
    if whole:
        return "; ".join(whole)
    # "budget_tokens must be greater than or equal to 1000": the bound, in pydantic's words.
    fields = "; ".join(
        f"{str(e['loc'][-1]).replace('_', '-')} {str(e['msg']).replace('Input should be', 'must be')}"
        for e in exc.errors()
    )
    return f"invalid setting: {fields}; see memvm serve --help"


def serve(args: argparse.Namespace) -> int:
    from memvm.server.app import build_server

    try:
        _check_listening(args)
        settings = _settings(args)
    except ValidationError as exc:
        print(f"memvm: {_invalid_settings(exc)}", file=sys.stderr)
        return 2
    except (SettingsError, TokenFileError) as exc:
        print(f"memvm: {exc}", file=sys.stderr)
        return 2
    try:
        anyio.run(_check_database, settings)
    except DatabaseRefused as exc:
        print(f"memvm: refusing to open {shown(settings.db)}: {exc}", file=sys.stderr)
        return 2
    except StorageError as exc:
        print(f"memvm: cannot open {shown(settings.db)}: {_start_problem(exc, settings)}", file=sys.stderr)
        return 2
    except (sqlite3.Error, OSError) as exc:
        # What is left: the disk or the file system said no (an I/O error, a vanished folder).
        print(f"memvm: cannot open {shown(settings.db)}: {exc}", file=sys.stderr)
        return 2
    server = build_server(settings, log_level=args.log_level)
    transport = Transport(args.transport)
    if transport is Transport.STDIO:
        if sys.stdin.isatty():
            # Someone typed `memvm serve` to try it: say what it is doing, where no client reads.
            print(stdio_waiting_line(settings.db), file=sys.stderr)
        server.run(transport="stdio")
        return 0
    from memvm.server.http_serve import run_http

    run_http(
        server,
        transport,
        host=args.host,
        port=args.port,
        extra_hosts=args.allowed_host,
        tokens=settings.tokens,
        log_level=args.log_level,
    )
    return 0


def stdio_waiting_line(db: str) -> str:
    """The one line `memvm serve` gives a person at a terminal, on stderr (stdout is the protocol's)."""
    return (
        f"memvm: serving {shown(db)} over stdio and waiting for an MCP client on stdin; a host starts "
        "this itself (see the README). Ctrl-C stops it; `memvm demo` shows it at work."
    )


# What a shell reports for a program that a closed pipe ended (128 + SIGPIPE), as for `yes | head`.
EXIT_READER_GONE = 141


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        return serve(args)
    if args.command == "ui":
        from memvm.ui.cli import main as run_ui

        return run_ui(args)
    if args.command == "demo":
        from memvm.server.demo import run_demo

        return run_demo(args.db)
    return run_operation(args)


def _reader_gone() -> int:
    # Whatever is still buffered can go nowhere: point stdout at the null device, so that the
    # interpreter's last flush on the way out does not fail a second time.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
    return EXIT_READER_GONE


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["hook"]:
        # Its own parser: a mistyped hook command answers the host, never exits 2 (a block).
        from memvm.hooks.client import main as hook

        return hook(given[1:])
    if given[:1] == ["hooks"]:
        from memvm.hooks.install_cli import main as hooks

        return hooks(given[1:])
    args = _parser().parse_args(given)
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


if __name__ == "__main__":
    sys.exit(main())
