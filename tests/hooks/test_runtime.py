"""The build id a background hook process is matched by: any change to the engine's sources, in
any of its folders, makes a new one, so a process running old code is never handed an event."""

import os
from pathlib import Path

import memvm.engine.paging.search as search_module
from memvm.hooks.runtime import build_id


def test_a_change_deep_in_the_engine_changes_the_build_id():
    source = Path(search_module.__file__)
    seen = source.stat()
    before = build_id()
    try:
        os.utime(source, ns=(seen.st_atime_ns, seen.st_mtime_ns + 1_000_000))
        assert build_id() != before
    finally:
        os.utime(source, ns=(seen.st_atime_ns, seen.st_mtime_ns))
