"""Running a command where a read-only folder really is read-only, as root too.

Root ignores file modes, and CI runs as root: there the command runs as the `nobody` user (through
util-linux's setpriv), for whom `chmod a-w` denies writes as it does for anyone else.
"""

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

NOBODY = 65534


def unprivileged(argv: list[str]) -> list[str]:
    """`argv`, run as a user that file modes bind."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes cannot be enforced")
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


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
