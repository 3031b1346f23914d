"""Fixtures shared by the tests that run real server processes."""

import json
from pathlib import Path

import pytest

# The browser fixtures (`browser`, `page`, `ui_server`), for every test in this folder.
from tests.e2e.browser import browser as browser
from tests.e2e.browser import page as page
from tests.e2e.browser import ui_server as ui_server
from tests.e2e.test_http import ALICE, BOB


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    """A tokens file: ALICE's token serves namespace alice, BOB's serves bob."""
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({ALICE: "alice", BOB: "bob"}))
    return path
