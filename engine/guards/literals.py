"""Numbers in tool arguments, tool results and user messages.

A *literal* is a number or a numeric string found anywhere in a JSON value: `42`, `3.5`,
`"1,200"`, `"$19.99"`, `"15%"`. Booleans are not numbers, although Python says they are ints.
Numbers inside longer text ("buy 3 apples") are not literals of the arguments; they are what
`numbers_in_text` finds in a user's message.
"""

import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memvm.engine.errors import InvalidArgument
from memvm.engine.redaction import redact_value

MAX_DEPTH = 32
MAX_NODES = 20_000

_NUMERIC_STRING = re.compile(
    r"""^\s*
    (?P<sign>[-+\u2212]?)\s*[$€£¥]?\s*(?P<sign2>[-+\u2212]?)   # a sign and a currency sign, either order
    (?P<mantissa>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)          # maybe grouped by thousands
    (?P<exponent>[eE][-+]?\d+)?
    \s*%?\s*$""",
    re.VERBOSE,
)
_PLAIN_DECIMAL = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$")
# In prose: not glued to a word or to a preceding decimal point ("v2", "abc123", "1.5.3").
_NUMBER_IN_TEXT = re.compile(
    r"(?<![\w.])([-\u2212]?)((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d])",
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Literal:
    """A number found in a JSON value: where it is, as written, and its numeric value."""

    path: str
    written: int | float | str
    number: float


def parse_numeric_string(text: str) -> float | None:
    """The number a string stands for when the whole string is one number, else None."""
    if len(text) > 64:
        return None
    if _PLAIN_DECIMAL.match(text):
        # `\s` takes the separators U+001C-U+001F for space, as str.strip() does; float() does not.
        value = float(text.strip())
    elif match := _NUMERIC_STRING.match(text):
        value = float(match["mantissa"].replace(",", "") + (match["exponent"] or ""))
        if (match["sign"] + match["sign2"]) in ("-", "\u2212"):
            value = -value
    else:
        return None
    return value if math.isfinite(value) else None


def as_number(value: Any) -> float | None:
    """The number a JSON scalar stands for (numbers and numeric strings), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer past the float range is no number anyone can use
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        return parse_numeric_string(value)
    return None


def find_literals(value: Any) -> list[Literal]:
    """Every number and numeric string in `value`, at any depth, with its path."""
    found = []
    for path, scalar in walk(value):
        number = as_number(scalar)
        if number is not None:
            found.append(Literal(path=path, written=scalar, number=number))
    return found


def walk(value: Any) -> Iterator[tuple[str, Any]]:
    """Each scalar in a JSON value with its path (`items[2].price`), depth and size bounded."""
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    seen = 0
    while stack:
        path, node, depth = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise InvalidArgument(f"The arguments hold more than {MAX_NODES} values; send fewer.")
        if depth > MAX_DEPTH:
            raise InvalidArgument(f"The arguments nest deeper than {MAX_DEPTH} levels; flatten them.")
        if isinstance(node, dict):
            children = [(_key_path(path, str(key)), child) for key, child in node.items()]
        elif isinstance(node, list | tuple):
            children = [(f"{path}[{index}]", child) for index, child in enumerate(node)]
        else:
            yield path, node
            continue
        # Reversed onto the stack, so scalars come out in document order.
        stack.extend((child_path, child, depth + 1) for child_path, child in reversed(children))


def numbers_in_text(text: str) -> set[float]:
    """The numbers a person wrote in prose: '1,200', '3.5', '-4', the parts of '2026-11-21'."""
    numbers = set()
    for match in _NUMBER_IN_TEXT.finditer(text):
        number = float(match.group(2).replace(",", ""))
        if math.isfinite(number):
            numbers.add(-number if match.group(1) else number)
            # "-4" in prose is often a dash, not a sign: keep both readings.
            numbers.add(number)
    return numbers


def canonical_json(value: Any) -> str:
    """One spelling per JSON value: sorted keys, no spaces, so equal values compare equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def call_hash(tool: str, args: Any) -> str:
    """Identifies a call by its tool and arguments, whatever the key order.

    Of the arguments as stored, secrets redacted: a call is known again whether it comes with
    its secrets (check_tool_call) or as it was logged without them (record_tool_outcome).
    """
    return hashlib.sha256(f"{tool}\x00{canonical_json(redact_value(args))}".encode()).hexdigest()


def short(written: Any, limit: int = 32) -> str:
    """A literal as a message shows it, cut short: messages stay small whatever comes in."""
    text = json.dumps(written, ensure_ascii=False) if isinstance(written, str) else repr(written)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key_path(parent: str, key: str) -> str:
    if _IDENTIFIER.fullmatch(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"
