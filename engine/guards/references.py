"""`$v1` and `$total`: references to bound values, found and resolved anywhere in arguments.

A string that is exactly one reference becomes the bound value itself, keeping its type (a number
stays a number, a list stays a list); such a reference may go on into the value, `$invoice.total`
or `$invoice.lines[0].qty`, and a path the value does not have is refused with what it does have.
A reference inside longer text is interpolated whole. `$vN` is
always a reference; inside longer text an unknown `$name` is left alone, because prose, shell
commands and prices use dollar signs too ("$HOME", "costs $5"). A whole-string reference to an
unknown binding is reported missing, never passed on as the literal text "$v9".
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memvm.engine.guards.literals import walk

_TOKEN = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_WHOLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]{1,9}\])*)$")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]")
# How many of a value's fields a refusal names.
_FIELDS_NAMED = 8
_SEQUENTIAL = re.compile(r"^v([1-9][0-9]*)$")
ALIAS_PATTERN = r"^\$?[A-Za-z_][A-Za-z0-9_]{0,63}$"


def sequential_name(seq: int) -> str:
    return f"v{seq}"


def sequence_of(name: str) -> int | None:
    """N for a name of the form vN, else None (an alias)."""
    match = _SEQUENTIAL.fullmatch(name)
    return int(match.group(1)) if match else None


def referenced_names(args: Any) -> set[str]:
    """Every name written as `$name` in any string of `args` (without the dollar sign)."""
    names: set[str] = set()
    for _, scalar in walk(args):
        if isinstance(scalar, str) and "$" in scalar:
            names.update(_TOKEN.findall(scalar))
    return names


@dataclass(frozen=True)
class Resolution:
    """`args` with every known reference replaced, and the references that were not known; those
    whose path the bound value does not have are among them, with why (`unreadable`)."""

    resolved: Any
    missing: list[str]
    unreadable: dict[str, str]


class _NoSuchPath(Exception):
    pass


def _follow(value: Any, name: str, path: str) -> Any:
    """The part of `value` that `path` (`.field`, `[index]`, ...) names."""
    where = f"${name}"
    for step in _STEP.finditer(path):
        field, index = step.group(1), step.group(2)
        if field is not None:
            if not isinstance(value, dict):
                raise _NoSuchPath(f"{where} is {_kind(value)}, with no field {field!r}")
            if field not in value:
                fields = ", ".join(sorted(value)[:_FIELDS_NAMED]) or "none"
                raise _NoSuchPath(f"{where} has no field {field!r} (its fields: {fields})")
            value, where = value[field], f"{where}.{field}"
        else:
            if not isinstance(value, list):
                raise _NoSuchPath(f"{where} is {_kind(value)}, not a list to index")
            if int(index) >= len(value):
                raise _NoSuchPath(f"{where} holds {len(value)} items, so [{index}] is past its end")
            value, where = value[int(index)], f"{where}[{index}]"
    return value


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    return "empty" if value is None else "a number" if isinstance(value, int | float) else "a value"


def resolve(args: Any, known: Mapping[str, Any]) -> Resolution:
    """Replace references by the values in `known` (name -> bound value), keeping types."""
    missing: list[str] = []
    unreadable: dict[str, str] = {}

    def replace_token(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in known:
            value = known[name]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if sequence_of(name) is not None:
            missing.append(f"${name}")
        return match.group(0)

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: visit(child) for key, child in node.items()}
        if isinstance(node, list):
            return [visit(child) for child in node]
        if not isinstance(node, str) or "$" not in node:
            return node
        whole = _WHOLE.fullmatch(node)
        if whole:
            name, path = whole.group(1), whole.group(2)
            if name in known:
                try:
                    return _follow(known[name], name, path)
                except _NoSuchPath as exc:
                    unreadable[node] = str(exc)
            missing.append(node)
            return node
        return _TOKEN.sub(replace_token, node)

    # walk() bounds depth and size before the recursive copy runs.
    for _ in walk(args):
        pass
    resolved = visit(args)
    return Resolution(resolved=resolved, missing=sorted(set(missing)), unreadable=unreadable)
