"""Folders for a command run as a user that file modes bind (tests/commands.py, run_unprivileged):
one that user can reach, and files and folders made read-only for everyone, that user included."""

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def open_dir() -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's own tmp_path is private to its owner)."""
    path = Path(tempfile.mkdtemp(prefix="memvm-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for folder, _, _ in os.walk(path):
            Path(folder).chmod(stat.S_IRWXU)
        shutil.rmtree(path)


def read_only(*paths: Path) -> None:
    """Take write permission away from everyone, the unprivileged user included."""
    for path in paths:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def readable_by_all(*paths: Path) -> None:
    """Let every user read the files: memvm makes a database its owner's alone, and one shared with
    another user is shared on purpose (`chmod a+r`)."""
    for path in paths:
        path.chmod(path.stat().st_mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
