"""The manifest: a JSON map of the session's memory, capped in tokens.

It names what is loaded, the pages most worth faulting, the policies in force and the counts.
When it would pass `manifest_max_tokens`, the listed available pages go first, then the
working-set entries; the counts always say how many were left out.
"""

import json
import math
from typing import Any

from memvm.engine import Engine
from memvm.engine.models.working_set import MemoryMap
from memvm.engine.paging.framing import neutralise
from memvm.engine.scope import SessionScope

MANIFEST_OPEN = "<VM:MANIFEST_JSON>"
MANIFEST_CLOSE = "</VM:MANIFEST_JSON>"
PREFER_LEVELS = [2, 1, 0]


# Line separators JSON leaves raw: escaped, so the manifest stays one line whatever a hint holds.
_RAW_LINE_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _dump(manifest: dict[str, Any]) -> str:
    # Escaped here, as rendered, so the cap counts what is sent; `&lt;` is valid inside a JSON string.
    return neutralise(
        json.dumps(manifest, ensure_ascii=False, separators=(",", ":")).translate(_RAW_LINE_BREAKS)
    )


def build_manifest(memory: MemoryMap) -> dict[str, Any]:
    """The manifest as a dict, before the token cap is applied."""
    view, available, counts = memory.view, memory.available, memory.counts
    return {
        "session": view.session,
        "turn": view.turn,
        "working_set": [{"page_id": e.page_id, "level": e.level, "tokens": e.tokens} for e in view.entries],
        "available_pages": [
            {
                "page_id": p.page_id,
                "type": p.type.value,
                "role": p.role.value if p.role else None,
                "session": p.session,
                "hint": p.hint,
                "tokens": p.tokens,
                # Said only of pinned pages: the manifest is counted against the budget.
                **({"pinned": True} if p.pinned else {}),
            }
            for p in available
        ],
        "policies": {
            "max_faults_per_turn": view.max_faults_per_turn,
            "faults_left": view.faults_left,
            "budget_tokens": view.budget_tokens,
            "reserved_tokens": view.reserved_tokens,
            "page_budget_tokens": view.budget_tokens - view.reserved_tokens,
            "working_set_tokens": view.reserved_tokens + view.page_tokens,
            "prefer_levels": PREFER_LEVELS,
        },
        "counts": {**counts, "listed": len(available), "omitted_available": 0, "omitted_working_set": 0},
    }


def cap_manifest(manifest: dict[str, Any], engine: Engine) -> str:
    """Drop listed pages, then working-set entries, then pinned listed pages, until the JSON fits
    the token cap: a pinned page is the last thing a session's manifest gives up."""
    cap = engine.config.manifest_max_tokens
    text = _dump(manifest)
    tokens = engine.counter.count(text)
    phases = (
        ("available_pages", "omitted_available", False),
        ("working_set", "omitted_working_set", True),
        ("available_pages", "omitted_available", True),
    )
    for key, counter, pinned_too in phases:
        while tokens > cap and (droppable := _droppable(manifest[key], pinned_too)):
            # Price an entry at the list's own average and drop enough for the overshoot: one or
            # two rounds, where dropping a quarter at a time tokenised a long manifest a dozen
            # times (most of what a build_context call spent).
            entries = manifest[key]
            entry_tokens = max(1.0, engine.counter.count(_dump(entries)) / len(entries))
            drop = min(droppable, max(1, math.ceil((tokens - cap) / entry_tokens)))
            del entries[-drop:]
            manifest["counts"][counter] += drop
            manifest["counts"]["listed"] = len(manifest["available_pages"])
            text = _dump(manifest)
            tokens = engine.counter.count(text)
    return text


def _droppable(entries: list[dict[str, Any]], pinned_too: bool) -> int:
    """How many entries may go from the end (listed pages are ordered pinned first)."""
    if pinned_too:
        return len(entries)
    return next((n for n, entry in enumerate(reversed(entries)) if entry.get("pinned")), len(entries))


async def render_manifest(scope: SessionScope) -> str:
    memory = await scope.memory_map()
    return cap_manifest(build_manifest(memory), scope.engine)
