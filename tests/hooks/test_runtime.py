"""The build id a background hook process is matched by: any change to the engine's sources, in
any of its folders, makes a new one, so a process running old code is never handed an event.

Shown on a source tree of its own: changing the real one would retire the background processes
of every other test running beside this one.
"""

import os
import shutil
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest
from memvm.hooks import runtime
from memvm.hooks.runtime import build_id


@pytest.fixture
def deep_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A source file two folders down in a stand-in for the engine's package."""
    package = tmp_path / "engine"
    (package / "paging").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    source = package / "paging" / "search.py"
    source.write_text("SEARCH = 1\n")

    def found(name: str) -> ModuleSpec:
        spec = ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(package)] if name == "memvm.engine" else []
        return spec

    monkeypatch.setattr(runtime, "find_spec", found)
    return source


def test_a_change_deep_in_the_engine_changes_the_build_id(deep_source):
    seen = deep_source.stat()
    before = build_id()
    os.utime(deep_source, ns=(seen.st_atime_ns, seen.st_mtime_ns + 1_000_000))
    assert build_id() != before


def test_a_file_replaced_by_a_copy_with_the_same_times_changes_the_build_id(deep_source):
    # As an unpacked or synced tree leaves it: the same contents, size and times, another file.
    before = build_id()
    copy = deep_source.with_name("search.py.new")
    shutil.copy2(deep_source, copy)
    os.replace(copy, deep_source)
    assert build_id() != before


def test_the_same_sources_give_the_same_build_id(deep_source):
    assert build_id() == build_id()
