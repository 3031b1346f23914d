"""`memvm hooks install HOST`: merge memvm's hook entries into the host's settings file.

The file is read whole, merged in memory and written back through a temporary file and a rename,
so a host that reads it meanwhile sees the old file or the new one, never half of either. The
previous file is first copied beside it under a timestamped name; a run that would change
nothing writes nothing at all.
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvm.engine.names import NAME_PATTERN
from memvm.hooks.events import Host
from memvm.hooks.install import (
    Scope,
    SettingsRefused,
    disabled_by_name,
    entries,
    hook_command,
    merge,
    settings_path,
)

EXIT_REFUSED = 2  # as argparse's own usage errors: nothing was written


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memvm hooks", description="Set up memvm as an agent host's hook.")
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser(
        "install",
        help="merge memvm's hook entries into the host's settings.json, keeping everything already there",
    )
    install.add_argument("host", choices=[h.value for h in Host], help="the agent host to set up")
    install.add_argument(
        "--scope",
        choices=[s.value for s in Scope],
        default=Scope.PROJECT.value,
        help="project: the settings folder under the current directory (default); user: under $HOME",
    )
    install.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="print memvm's entries as JSON and write nothing",
    )
    install.add_argument("--db", help="SQLite file the hook uses, written as an absolute path")
    install.add_argument("--namespace", help="whose memory the hook reads and writes")
    return parser


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsRefused("it is not JSON") from exc


def _backup(path: Path) -> Path:
    """Copy the file beside itself; an earlier backup is never overwritten."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.{stamp}-{n}.bak")
    shutil.copy2(path, backup)
    return backup


def _write(path: Path, settings: dict[str, Any]) -> None:
    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def install(host: Host, path: Path, command: str) -> list[str]:
    """Merge memvm's entries into the file at `path`; the lines that say what was done."""
    existing = _read(path) if path.exists() else None
    merged = merge({} if existing is None else existing, host, command)
    if merged == existing:
        return [f"memvm hooks for {host.value} are already in {path}; nothing changed"]
    path.parent.mkdir(parents=True, exist_ok=True)
    said = []
    if existing is None:
        said.append(f"created {path} with memvm's hooks for {host.value}")
    else:
        backup = _backup(path)
        said.append(f"merged memvm's hooks for {host.value} into {path}; the previous file is {backup}")
    _write(path, merged)
    if disabled_by_name(merged):
        said.append(f'note: "hooks"."disabled" in {path} lists "memvm", so Gemini CLI will not run it')
    return said


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    host = Host(args.host)
    if args.namespace is not None and not re.match(NAME_PATTERN, args.namespace):
        print(
            "memvm hooks install: --namespace takes letters, digits and _ . : - (up to 64, "
            "starting with a letter or digit); nothing was written",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    command = hook_command(host, args.db, args.namespace)
    if args.print_only:
        print(json.dumps(entries(host, command), indent=2))
        return 0
    path = settings_path(host, Scope(args.scope), Path.cwd(), Path.home())
    try:
        said = install(host, path, command)
    except SettingsRefused as exc:
        print(
            f"memvm hooks install: {path} is left untouched because {exc}; "
            "fix it or move it aside, then run this again",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    except OSError as exc:
        print(f"memvm hooks install: {path} could not be updated ({exc.strerror or exc})", file=sys.stderr)
        return 1
    for line in said:
        print(line)
    return 0
