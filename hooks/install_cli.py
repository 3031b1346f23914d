"""`memvm hooks install|uninstall HOST`: merge memvm's hook entries into the host's settings file,
or take exactly them out again.

The file is read whole, changed in memory and written back with nothing else of it changed
(hooks/settings_file.py: numbers as written, through a link to the file the link names, by a
rename). The previous file is first copied into memvm's own data folder (never into the host's
settings folder, where it would be read or committed); a run that would change nothing writes
nothing at all.
"""

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from memvm.engine.names import NAME_RULE, is_name
from memvm.engine.paths import data_dir
from memvm.hooks import settings_file
from memvm.hooks.host_spec import HostSpec, Scope
from memvm.hooks.hosts import HOSTS
from memvm.hooks.install import (
    InstallRefused,
    SettingsRefused,
    disabled_by_name,
    entries,
    hook_command,
    memvm_program,
    merge,
    remove,
    settings_path,
)

EXIT_REFUSED = 2  # as argparse's own usage errors: nothing was written
EXIT_READER_GONE = 141  # as a shell reports a program a closed pipe ended (`... --print | head`)
# A shared file names memvm by name: each teammate's own install is on their own PATH.
SHARED_PROGRAM = "memvm"

_SCOPE_HELP = (
    "local: yours, this project (Claude Code's .claude/settings.local.json; its default); "
    "project: the team's, committed with the project (.claude/ or .gemini/settings.json); "
    "user: yours, every project (under $HOME; Gemini CLI's default)"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memvm hooks", description="Set up memvm as an agent host's hook.")
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser(
        "install",
        help="merge memvm's hook entries into the host's settings file, keeping everything already there",
    )
    uninstall = commands.add_parser(
        "uninstall", help="take memvm's hook entries out of the host's settings file, and nothing else"
    )
    for command in (install, uninstall):
        command.add_argument("host", choices=list(HOSTS), help="the agent host")
        command.add_argument("--scope", choices=[s.value for s in Scope], help=_SCOPE_HELP)
    install.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="print memvm's entries as JSON and write nothing",
    )
    install.add_argument("--db", help="SQLite file the hook uses, written as an absolute path")
    install.add_argument("--namespace", help="whose memory the hook reads and writes")
    return parser


def _backup(path: Path, host: HostSpec) -> Path:
    """Copy the file into memvm's data folder; an earlier backup is never overwritten."""
    folder = data_dir() / "settings-backups"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    stem = f"{host.name}-{path.name}.{stamp}"
    backup = folder / f"{stem}.bak"
    n = 1
    while backup.exists():
        n += 1
        backup = folder / f"{stem}-{n}.bak"
    shutil.copy2(path, backup)
    return backup


def _shown(path: Path, file: Path) -> str:
    return str(path) if file == path else f"{path} (a link: written through to {file})"


def install(host: HostSpec, path: Path, command: str) -> list[str]:
    """Merge memvm's entries into the file at `path`; the lines that say what was done."""
    file = settings_file.target(path)
    existing = settings_file.read(file)
    merged = merge({} if existing is None else existing, host, command)
    if merged == existing:
        return [f"memvm hooks for {host.name} are already in {path}; nothing changed"]
    file.parent.mkdir(parents=True, exist_ok=True)
    said = []
    if existing is None:
        said.append(f"created {path} with memvm's hooks for {host.name}")
    else:
        backup = _backup(file, host)
        said.append(
            f"merged memvm's hooks for {host.name} into {_shown(path, file)}; the previous file is {backup}"
        )
    settings_file.write(file, merged)
    if host.settings.named_handlers and disabled_by_name(merged):
        said.append(f'note: "hooks"."disabled" in {path} lists "memvm", so {host.title} will not run it')
    return said


def uninstall(host: HostSpec, path: Path) -> list[str]:
    """Take memvm's entries out of the file at `path`; the lines that say what was done."""
    file = settings_file.target(path)
    existing = settings_file.read(file)
    kept = None if existing is None else remove(existing, host)
    if existing is None or kept == existing:
        return [f"no memvm hooks for {host.name} in {path}; nothing changed"]
    backup = _backup(file, host)
    settings_file.write(file, kept or {})
    return [f"took memvm's hooks for {host.name} out of {_shown(path, file)}; the previous file is {backup}"]


def _shared_file_note(host: HostSpec) -> str:
    return (
        f"this file is shared: each teammate needs memvm on the PATH {host.name} runs hooks with, and "
        "their captures go to their own memory ($MEMVM_DB, else memvm's per-user data folder); "
        "for yourself alone, install with --scope local or user instead, which names this memvm by its path"
    )


def _command_line(args: argparse.Namespace, host: HostSpec, scope: Scope) -> str:
    if args.namespace is not None and not is_name(args.namespace):
        raise InstallRefused(f"--namespace takes {NAME_RULE}")
    if scope is Scope.PROJECT:
        if args.db is not None:
            raise InstallRefused(
                "a shared settings file names no path of yours: leave out --db (each teammate's "
                "hook uses their own $MEMVM_DB or default), or use --scope local or user"
            )
        return hook_command(host, SHARED_PROGRAM, None, args.namespace)
    return hook_command(host, memvm_program(), args.db, args.namespace)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    host = HOSTS[args.host]
    scope = Scope(args.scope) if args.scope else host.settings.default_scope
    name = f"memvm hooks {args.command}"
    try:
        path = settings_path(host, scope, Path.cwd(), Path.home())
        if args.command == "uninstall":
            said = uninstall(host, path)
        else:
            command = _command_line(args, host, scope)
            if args.print_only:
                return _printed([json.dumps(entries(host, command), indent=2)])
            said = install(host, path, command)
            if scope is Scope.PROJECT:
                said.append(_shared_file_note(host))
    except InstallRefused as exc:
        print(f"{name}: {exc}; nothing was written", file=sys.stderr)
        return EXIT_REFUSED
    except SettingsRefused as exc:
        print(
            f"{name}: {path} is left untouched because {exc}; fix it or move it aside, then run this again",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    except OSError as exc:
        print(f"{name}: {path} could not be updated ({exc.strerror or exc})", file=sys.stderr)
        return 1
    return _printed(said)


def _printed(lines: list[str]) -> int:
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()  # here, where a reader that left can still be caught
    except BrokenPipeError:
        # Nothing more can reach it: the interpreter's last flush goes to the null device.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return EXIT_READER_GONE
    return 0
