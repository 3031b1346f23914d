"""Fixtures shared by the tests that run real server processes."""

import json
from pathlib import Path

import pytest

from tests.e2e.test_http import ALICE, BOB


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    """A tokens file: ALICE's token serves namespace alice, BOB's serves bob."""
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({ALICE: "alice", BOB: "bob"}))
    return path
