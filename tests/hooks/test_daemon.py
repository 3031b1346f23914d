"""The background process's own code, run in this process: how it ends when its socket goes.
Its life as a real process (started by `memvm hook`, idle, killed, replaced) is test_background.py."""

import shutil
import tempfile
import threading
from pathlib import Path

import anyio
import pytest
from memvm.hooks import daemon
from memvm.hooks.runtime import DB_VARIABLE


def _run(runtime: Path) -> int:
    """The background process's main, in this process (on a thread: it runs its own event loop)."""
    argv = [
        "--wait-ms",
        "3000",
        "--idle",
        "600",
        "--socket",
        str(runtime / "d.sock"),
        "--lock",
        str(runtime / "d.lock"),
    ]
    ended: list[int | BaseException] = []

    def run() -> None:
        try:
            ended.append(daemon.main(argv))
        except BaseException as exc:  # handed to the test, which says what it was
            ended.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)  # far less than its idle time: it must end by itself
    assert not thread.is_alive(), "the background process outlived its socket"
    assert isinstance(ended[0], int), f"the background process failed: {ended[0]!r}"
    return ended[0]


@pytest.mark.parametrize("when", ["at once", "after the first look"])
def test_a_socket_removed_as_soon_as_it_was_made_ends_the_process(tmp_path, monkeypatch, when):
    # A cleaned runtime folder can take the socket in the moment between its making and the
    # process noting which file it is: the process must still see that nobody can reach it.
    made = anyio.create_unix_listener
    # A folder of its own, not hook_runtime's: that one's teardown signals the pid in each lock
    # file, which here is this process. Short: a socket's path must be.
    runtime = Path(tempfile.mkdtemp(prefix="mvd"))

    async def made_then_removed(path):  # type: ignore[no-untyped-def]
        listener = await made(path)
        if when == "at once":
            await anyio.Path(path).unlink()
        else:
            threading.Timer(1.0, Path(path).unlink).start()
        return listener

    monkeypatch.setattr(daemon.anyio, "create_unix_listener", made_then_removed)
    monkeypatch.setenv(DB_VARIABLE, str(tmp_path / "m.db"))
    try:
        assert _run(runtime) == 0
        assert list(runtime.glob("*.sock")) == []
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
