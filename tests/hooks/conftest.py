"""Every hook test gets a runtime folder of its own for the background processes its hook runs
start, and those processes are stopped when it ends."""

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hooks.runner import stop_background


@pytest.fixture(autouse=True)
def hook_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # Under /tmp, not tmp_path: a Unix socket's path must stay short.
    folder = Path(tempfile.mkdtemp(prefix="mvh"))
    monkeypatch.setenv("MEMVM_RUNTIME_DIR", str(folder))
    yield folder
    stop_background(folder)
    shutil.rmtree(folder, ignore_errors=True)
