"""Every hook test gets a runtime folder of its own for the background processes its hook runs
start, and those processes are stopped when it ends."""

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.hooks.runner import Answer, run_hook, run_hook_process, stop_background


@pytest.fixture(autouse=True)
def hook_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # Under /tmp, not tmp_path: a Unix socket's path must stay short.
    folder = Path(tempfile.mkdtemp(prefix="mvh"))
    monkeypatch.setenv("MEMVM_RUNTIME_DIR", str(folder))
    yield folder
    stop_background(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(
    params=["in_process", pytest.param("process", marks=[pytest.mark.slow, pytest.mark.above_storage])]
)
def hook_runner(request: pytest.FixtureRequest) -> Callable[..., Answer]:
    """Each test that takes it runs twice: through the hook's entry point in this process, and
    (end-to-end stage, on SQLite) through the real `memvm hook` process with its background process."""
    return run_hook if request.param == "in_process" else run_hook_process
