"""Which stored JSON the tools can read back: what `memvm import` and `doctor` hold JSON columns to.

SQLite's `json_valid` accepts JSON that Python's `json` module cannot read: nesting deep enough to
exhaust the interpreter's recursion limit, integers longer than Python converts from text (4300
digits), numbers that overflow to infinity, which no JSON reply can hold. A stored value like that
passes SQLite and then fails the first tool that reads it.

Nothing the tools write comes near these bounds: every request is parsed by pydantic's JSON
reader, which refuses nesting deeper than 200 levels, and what the engine stores wraps a
request's JSON in at most a few levels of its own.
"""

import json
import math
import re
from typing import Any

# Past anything a request can carry (see above), far below Python's recursion limit (1000),
# whatever depth of the stack reads it.
MAX_JSON_DEPTH = 256

# Strings first, so that a bracket inside one is not counted; escapes are consumed in pairs.
_STRINGS = re.compile(r'"(?:[^"\\]+|\\.)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def _depth(text: str) -> int:
    depth = deepest = 0
    for bracket in _NOT_BRACKETS.sub("", _STRINGS.sub("", text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError("an infinite number")
    return number


def _refuse(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def json_kind(text: object) -> str | None:
    """The JSON type of `text` ('object', 'array', 'string', 'number', 'boolean', 'null'), or
    None when it is not JSON the tools can read back."""
    if not isinstance(text, str) or _depth(text) > MAX_JSON_DEPTH:
        return None
    try:
        value = json.loads(text, parse_float=_finite, parse_constant=_refuse)
    except (ValueError, RecursionError):  # ValueError: not JSON, or an integer too long to read
        return None
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"
