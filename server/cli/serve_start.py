"""`memvm serve`, once its line is parsed: the settings it names, the checks that refuse what
cannot be served (a bad database file, an open bind without tokens), then the MCP server over
stdio or HTTP."""

import argparse
import os
import shutil
import sys
from collections.abc import Iterable
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
from memvm.engine.guard_config import GuardConfig, GuardConfigError, load_guard_config
from memvm.engine.paging.projects import project_session, work_tree
from memvm.engine.paths import DatabasePathError, check_db_path, database_named
from memvm.engine.settings_limits import SettingOutOfRange, UnusableSettings
from memvm.engine.storage.open import failure_types, local_file, shown
from memvm.server.app import build_server
from memvm.server.cli.search_flags import search_settings
from memvm.server.http import is_loopback
from memvm.server.settings import ServerSettings, ToolProfile, Transport
from memvm.server.tokens import TokenFileError, load_tokens
from pydantic import ValidationError


class SettingsError(Exception):
    """A setting from the command line or a settings file that cannot be used."""


def _guards(args: argparse.Namespace) -> GuardConfig:
    try:
        return load_guard_config(args.guards, args.guard_config)
    except GuardConfigError as exc:
        raise SettingsError(str(exc)) from exc


def server_settings(args: argparse.Namespace) -> ServerSettings:
    """The settings `memvm serve ARGS` runs with; SettingsError, UnusableSettings (the engine's) or
    pydantic's ValidationError (the server's) for what cannot be used."""
    project = _project(args.project)
    db = database_named(args.db)
    if (file := local_file(db)) is not None:
        try:
            check_db_path(file, create_folder=True)
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
                **search_settings(args),
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
    """`config` with its reserve set, refused (UnusableSettings) if its budget leaves no room for a
    page beside it."""
    from memvm.resources.budget import with_reserve

    return with_reserve(config)


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
    """One line for server settings that do not validate (a namespace's or session's name)."""
    return _invalid(
        f"{_flag(str(e['loc'][-1]))} {str(e['msg']).replace('Input should be', 'must be')}"
        for e in exc.errors()
    )


def _invalid(fields: Iterable[str]) -> str:
    """The line for settings out of bounds: "budget-tokens must be greater than or equal to 1000"."""
    return f"invalid setting: {'; '.join(fields)}; see memvm serve --help"


def _flag(field: str) -> str:
    """The command-line flag's name for a setting: budget_tokens is --budget-tokens, said without dashes."""
    return field.replace("_", "-")


def serve(args: argparse.Namespace) -> int:
    """Check the settings and the database, then serve until the transport ends."""
    try:
        _check_listening(args)
        settings = server_settings(args)
    except ValidationError as exc:
        print(f"memvm: {_invalid_settings(exc)}", file=sys.stderr)
        return 2
    except SettingOutOfRange as exc:
        print(f"memvm: {_invalid([f'{_flag(exc.name)} must be {exc.bound}'])}", file=sys.stderr)
        return 2
    except UnusableSettings as exc:  # the settings as a whole (a budget with no room for pages)
        print(f"memvm: {exc}", file=sys.stderr)
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
    # What is left: the disk, the file system or the database itself said no (an I/O error, a
    # vanished folder, a damaged file).
    except OSError as exc:
        print(f"memvm: cannot open {shown(settings.db)}: {exc}", file=sys.stderr)
        return 2
    except failure_types() as exc:
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
