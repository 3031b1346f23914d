"""A host's settings file read and written back with nothing of it changed but memvm's entries.

- Numbers stay as written. Python's reader would turn `1e400` into infinity, written back as
  `Infinity` (not JSON: the host could no longer read its own settings), and `0.10000000000000001`
  into `0.1`. Each number is kept as its text (`Number`) and written back as that text.
- A link is followed, and the file it names is rewritten; the link stays. Dotfile managers (GNU
  Stow, chezmoi, home-manager) keep `~/.claude/settings.json` as a link into the user's dotfiles,
  and whoever keeps them there expects a change to land there: replacing the link with a file
  would quietly fork the settings from the dotfiles, and the manager's next run would clash with
  it. A link that leads nowhere is refused.
- Only a regular file is read (a FIFO would hold the install), and a file nested deeper than any
  settings are, or holding `NaN` or `Infinity`, is refused: nothing is written.

The new text goes to a temporary file beside the one it replaces, then a rename, so a host that
reads the file meanwhile sees the old file or the new one, never half of either.
"""

import json
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvm.engine.hosts.host_files import NotRegularFile, open_regular
from memvm.hooks.install import SettingsRefused

# Hosts' settings are a few levels deep; past this, a file is not one memvm merges into (and
# copying or writing it would exhaust Python's recursion first).
MAX_DEPTH = 64


@dataclass(frozen=True)
class Number:
    """A number of the file, as written there."""

    text: str


def target(path: Path) -> Path:
    """The file to read and rewrite for the settings at `path`: `path` itself, or the file the
    link at `path` names (through every link on the way)."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        raise SettingsRefused(
            f"it is a link to {os.readlink(path)}, which leads to no file ({exc.strerror or exc})"
        ) from exc


def read(path: Path) -> Any | None:
    """The settings at `path` (a file, not a link: see `target`), or None when there is none."""
    try:
        fd = open_regular(path, os.O_RDONLY, follow_links=False)
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        raise SettingsRefused("it is not a regular file") from exc
    with os.fdopen(fd, "rb") as file:
        raw = file.read()
    try:
        settings = json.loads(
            raw.decode("utf-8"), parse_float=Number, parse_int=Number, parse_constant=_not_json
        )
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsRefused("it is not JSON") from exc
    except _NotJson as exc:
        raise SettingsRefused(f"it is not JSON ({exc} is no JSON number)") from exc
    except RecursionError as exc:
        raise SettingsRefused(f"it is nested deeper than {MAX_DEPTH} levels") from exc
    if _deeper_than(settings, MAX_DEPTH):
        raise SettingsRefused(f"it is nested deeper than {MAX_DEPTH} levels")
    return settings


class _NotJson(ValueError):
    pass


def _not_json(constant: str) -> Any:
    raise _NotJson(constant)


def _deeper_than(value: Any, limit: int) -> bool:
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            pending.extend((child, depth + 1) for child in children)
    return False


def text(settings: Any) -> str:
    """The settings as the file's text: indented JSON, each `Number` as it was written."""
    # The encoder writes a float subclass through float's own repr, so each Number goes out as a
    # placeholder string no file holds (a fresh random tag), and the placeholder is then replaced.
    tag = secrets.token_hex(8)
    numbers: dict[str, str] = {}

    def placeholder(value: Any) -> str:
        if not isinstance(value, Number):
            raise TypeError(f"{type(value).__name__} is not JSON")
        key = f"memvm-number-{tag}-{len(numbers)}"
        numbers[json.dumps(key)] = value.text
        return key

    written = json.dumps(settings, indent=2, ensure_ascii=False, default=placeholder)
    for quoted, number in numbers.items():
        written = written.replace(quoted, number, 1)
    return written + "\n"


def write(path: Path, settings: Any) -> None:
    """Replace the file at `path` (a file, not a link: see `target`) with `settings`."""
    written = text(settings)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(written)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
