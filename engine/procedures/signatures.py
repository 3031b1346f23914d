"""How tool calls are compared: error signatures, and the delta between two calls' arguments.

An error signature is the message with everything call-specific taken out (quoted values, paths,
URLs, ids, hex, numbers), so "user 4411 not found" and "user 9 not found" are one error. A delta
says what changed from a failing call to the one that worked: keys added, keys removed, and values
changed, with nested objects compared key by key ("options.timeout").
"""

import json
import re
from typing import Any

from memvm.engine.guards.literals import canonical_json

MAX_SIGNATURE_CHARS = 120
MAX_DELTA_VALUE_CHARS = 200
_FLATTEN_DEPTH = 4

# Order matters: quoted text first (it may hold anything), numbers last.
_NORMALISERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`|“[^”]*”"), "<q>"),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), "<url>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.@~+-]+){2,}[\\/]?|~[\\/][\w.@~/+-]+"), "<path>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{12,}\b", re.I), "<hex>"),
    (re.compile(r"\b[A-Za-z]+[_-]?\d[\w-]*\b"), "<id>"),
    (re.compile(r"[-+]?\d+(?:[.,]\d+)*"), "<n>"),
)


# A line that says only how a command ended ("Exit code 1", as a host reports a failed shell
# command), with what went wrong on the lines after it: every failed command would share it.
_EXIT_STATUS_ONLY = re.compile(
    r"(?:exit(?:ed)?(?: with)? (?:code|status)|returned) ?-?\d+[.:]?", re.IGNORECASE
)


def telling_line(message: str) -> str:
    """The message's first line that says what went wrong, past any that gives an exit status only."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return next((line for line in lines if not _EXIT_STATUS_ONLY.fullmatch(line)), lines[0])


def error_signature(error_type: str | None, message: str | None, fallback: str) -> str:
    """The key errors group under: an explicit type as given, else the normalised message."""
    if error_type and error_type.strip():
        return error_type.strip()[:MAX_SIGNATURE_CHARS]
    if not message or not message.strip():
        return fallback
    text = telling_line(message)
    for pattern, placeholder in _NORMALISERS:
        text = pattern.sub(placeholder, text)
    text = re.sub(r"\s+", " ", text).strip().lower()
    return text[:MAX_SIGNATURE_CHARS] or fallback


def flatten(args: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Nested objects as dotted keys; lists and scalars stay values."""
    if not isinstance(args, dict) or depth >= _FLATTEN_DEPTH:
        return {prefix: args} if prefix else {"": args}
    flat: dict[str, Any] = {}
    for key, value in args.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(flatten(value, name, depth + 1))
        else:
            flat[name] = value
    return flat


def argument_delta(before: Any, after: Any) -> dict[str, Any]:
    """`{added, removed, changed{key: {from, to}}}` from `before`'s arguments to `after`'s."""
    old, new = flatten(before), flatten(after)
    return {
        "added": {key: _bounded(new[key]) for key in sorted(new.keys() - old.keys())},
        "removed": {key: _bounded(old[key]) for key in sorted(old.keys() - new.keys())},
        "changed": {
            key: {"from": _bounded(old[key]), "to": _bounded(new[key])}
            for key in sorted(old.keys() & new.keys())
            if canonical_json(old[key]) != canonical_json(new[key])
        },
    }


def describe_delta(delta: dict[str, Any], limit: int = 3) -> str:
    """The delta in words: 'changed date from "12/05" to "2026-05-12"; added strict=true'."""
    parts = [
        f"changed {key} from {_show(change['from'])} to {_show(change['to'])}"
        for key, change in delta.get("changed", {}).items()
    ]
    parts += [f"added {key}={_show(value)}" for key, value in delta.get("added", {}).items()]
    parts += [f"removed {key}" for key in delta.get("removed", {})]
    shown = "; ".join(parts[:limit])
    return shown + (f"; and {len(parts) - limit} more" if len(parts) > limit else "")


def _bounded(value: Any) -> Any:
    # A delta is advice, not a copy of the call: long values are cut.
    text = canonical_json(value)
    return value if len(text) <= MAX_DELTA_VALUE_CHARS else text[: MAX_DELTA_VALUE_CHARS - 1] + "…"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"
