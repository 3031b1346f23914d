"""What the commands ask of a database name: the file it means on this machine, if any."""

from pathlib import Path

from memvm.engine.storage.open import local_file


def test_a_path_is_a_local_file_and_a_url_or_memory_is_none():
    assert local_file("/tmp/memvm.db") == Path("/tmp/memvm.db")
    assert local_file(Path("relative.db")) == Path("relative.db")
    assert local_file("postgresql://memvm@db/team") is None
    assert local_file("postgres://memvm:s3cret@db:5432/team") is None
    assert local_file(":memory:") is None
