"""What clients receive is a contract: every tool's name, description and input and output schemas,
and the resources and prompts, in each tool profile, as a committed snapshot.

The schemas are generated (from the tool functions' arguments and from the models in
engine/models/), so a renamed field or a reworded docstring changes what every client sees. This
test makes such a change visible in review: it fails with a diff until the snapshot is rewritten
on purpose with MEMVM_UPDATE_SNAPSHOTS=1. That run fails too, after writing the file, so that a
change is never accepted by a run that only meant to test; the next run, with the rewritten file
in the diff to review and commit, passes.
"""

import difflib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings, ToolProfile
from pydantic import BaseModel

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("backend", ["sqlite"])]

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path("tests") / "server" / "snapshots" / "listing.json"
TEST = Path("tests") / "server" / Path(__file__).name
UPDATE = "MEMVM_UPDATE_SNAPSHOTS"
# Each list the snapshot holds: the client call that reads it, the result's field holding the
# entries, and the field that names an entry.
LISTS = {
    "tools": ("list_tools", "tools", "name"),
    "resources": ("list_resources", "resources", "uri"),
    "resourceTemplates": ("list_resource_templates", "resource_templates", "uriTemplate"),
    "prompts": ("list_prompts", "prompts", "name"),
}


async def listing(db: str, mode: str) -> dict[str, Any]:
    """Everything each tool profile lists, as the official client receives it in protocol era `mode`."""
    profiles = {}
    for profile in ToolProfile:
        sections = {}
        async with Client(build_server(ServerSettings(db=db, tools=profile)), mode=mode) as client:
            for section, (call, field, key) in LISTS.items():
                result = await getattr(client, call)()
                assert result.next_cursor is None, f"{section} come in pages: the snapshot would miss some"
                sections[section] = wired(getattr(result, field), key)
        profiles[profile.value] = sections
    return profiles


def wired(items: Sequence[BaseModel], key: str) -> list[dict[str, Any]]:
    """The items of a list result as JSON on the wire, ordered by `key`."""
    dumped = [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]
    return sorted(dumped, key=lambda item: str(item[key]))


def as_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def differences(expected: str, actual: str, expected_name: str, actual_name: str) -> str:
    """Which entries differ (like `all tools record_tool_outcome`), then the unified diff."""
    before, after = (json.loads(text) if text else {} for text in (expected, actual))
    lines = difflib.unified_diff(
        expected.splitlines(keepends=True), actual.splitlines(keepends=True), expected_name, actual_name
    )
    return f"changed: {', '.join(changed_entries(before, after))}\n{''.join(lines)}"


def changed_entries(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    changed = []
    for profile in sorted(before.keys() | after.keys()):
        for section, (_, _, key) in LISTS.items():
            old, new = (
                {str(entry[key]): entry for entry in document.get(profile, {}).get(section, [])}
                for document in (before, after)
            )
            changed += [
                f"{profile} {section} {name}"
                for name in sorted(old.keys() | new.keys())
                if old.get(name) != new.get(name)
            ]
    return changed


async def test_the_tools_resources_and_prompts_listed_match_the_snapshot(migrated):
    listed = as_text(await listing(migrated(), mode="auto"))
    snapshot = ROOT / SNAPSHOT
    committed = snapshot.read_text(encoding="utf-8") if snapshot.exists() else ""
    if listed == committed:
        return
    diff = differences(committed, listed, f"{SNAPSHOT} (committed)", "listed by the server now")
    if os.environ.get(UPDATE) == "1":
        snapshot.parent.mkdir(exist_ok=True)
        snapshot.write_text(listed, encoding="utf-8")
        pytest.fail(
            f"{SNAPSHOT} rewritten with what the server lists now ({UPDATE}=1). Review the change "
            f"(git diff {SNAPSHOT}), commit it, and run the tests again without {UPDATE}:\n{diff}"
        )
    pytest.fail(
        f"What clients receive differs from {SNAPSHOT}:\n{diff}\n"
        f"If the change is meant, rewrite the snapshot with `{UPDATE}=1 .venv/bin/python -m pytest "
        f"{TEST}`, review the rewritten file and commit it with the change."
    )


async def test_the_handshake_era_lists_the_same_as_the_current_era(migrated):
    current = as_text(await listing(migrated(), mode="auto"))
    legacy = as_text(await listing(migrated(), mode="legacy"))
    assert legacy == current, differences(current, legacy, "current era", "handshake era")
