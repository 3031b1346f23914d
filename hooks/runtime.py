"""Where the background hook process of a database listens, and whether it may listen at all.

One process per database file, hook settings that shape its engine, and installed code: a
changed memvm (an upgrade, an edit of a development checkout) gets a new process and the old one
idles out, so no event is ever answered by stale code. Standard library only.
"""

import contextlib
import hashlib
import os
import stat
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

# The database a background process serves, handed over in its environment (readable by this user
# alone) rather than its arguments (which any user can list): a PostgreSQL URL may hold a password.
DB_VARIABLE = "MEMVM_HOOK_DB"

# Unix sockets' paths are short (108 bytes on Linux, 104 on macOS).
_MAX_SOCKET_PATH = 100


@dataclass(frozen=True)
class Endpoint:
    socket: Path  # where the process answers
    lock: Path  # held by the one live process; holds its pid
    spawned: Path  # touched when a process is started, so a failing start is not retried at once


def runtime_dir() -> Path | None:
    """A directory only this user can enter, or None where none can be had (then no background).

    $MEMVM_RUNTIME_DIR, else $XDG_RUNTIME_DIR/memvm, else /tmp/memvm-UID. An existing directory
    that is a link, someone else's, or open to others is not used: whoever could enter it could
    answer this user's hooks.
    """
    if sys.platform == "win32" or not hasattr(os, "getuid"):
        return None
    if chosen := os.environ.get("MEMVM_RUNTIME_DIR"):
        folder = Path(chosen)
    elif xdg := os.environ.get("XDG_RUNTIME_DIR"):
        folder = Path(xdg) / "memvm"
    else:
        folder = Path("/tmp") / f"memvm-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        found = os.lstat(folder)
    except OSError:
        return None
    private = stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077
    return folder if private else None


def endpoint(db: str, wait_ms: int) -> Endpoint | None:
    folder = runtime_dir()
    if folder is None:
        return None
    key = hashlib.sha256(f"{db}\0{wait_ms}\0{build_id()}".encode()).hexdigest()[:24]
    socket = folder / f"{key}.sock"
    if len(os.fsencode(socket)) > _MAX_SOCKET_PATH:
        return None
    return Endpoint(socket=socket, lock=folder / f"{key}.lock", spawned=folder / f"{key}.spawned")


def build_id() -> str:
    """The Python installation, its installed packages, and the engine's and the hooks' sources.

    A file's inode and change time are in it beside its modification time and size: a copy that
    keeps the times (`cp -p`, `rsync -a`) still changes those. An installed or upgraded package
    changes its site-packages folder.
    """
    parts = [sys.prefix, sys.version]
    for folder in sys.path:
        if folder.endswith("site-packages"):
            with contextlib.suppress(OSError):
                parts.append(f"{folder}:{os.stat(folder).st_mtime_ns}")
    for package in ("memvm.engine", "memvm.hooks"):
        spec = find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            # The engine's capability folders too: the whole tree under the package.
            for path in sorted(Path(folder).rglob("*.py")):
                seen = path.stat()
                parts.append(f"{path}:{seen.st_ino}:{seen.st_mtime_ns}:{seen.st_ctime_ns}:{seen.st_size}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
