"""Opening a file whose path someone else may choose: a regular file or an error, at once."""

import os
from pathlib import Path

import pytest
from memvm.engine.hosts.host_files import NotRegularFile, open_regular

from tests.hooks.runner import within


def _read(path: Path, *, follow_links: bool) -> bytes:
    with os.fdopen(open_regular(path, os.O_RDONLY, follow_links=follow_links), "rb") as file:
        return file.read()


def test_a_regular_file_opens_and_a_link_to_it_only_when_links_are_followed(tmp_path):
    (tmp_path / "real").write_bytes(b"text")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert _read(tmp_path / "real", follow_links=False) == b"text"
    assert _read(tmp_path / "link", follow_links=True) == b"text"
    with pytest.raises(NotRegularFile):
        _read(tmp_path / "link", follow_links=False)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a platform without FIFOs")
@pytest.mark.parametrize("follow_links", [True, False])
def test_a_fifo_a_device_and_a_folder_are_refused_without_waiting(tmp_path, follow_links):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def refused(path: Path) -> bool:
        try:
            _read(path, follow_links=follow_links)
        except NotRegularFile:
            return True
        return False

    # Opened blocking, a FIFO with no writer would wait for one: the wait is bounded here.
    kinds = {"fifo": fifo, "device": Path("/dev/zero"), "folder": tmp_path}
    found = {kind: within(30, lambda path=path: refused(path), fifo) for kind, path in kinds.items()}
    assert found == {"fifo": True, "device": True, "folder": True}


def test_a_missing_file_is_the_open_s_own_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        _read(tmp_path / "missing", follow_links=True)
