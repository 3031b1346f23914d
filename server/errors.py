"""Engine errors and argument errors become tool errors here, and only here.

The model reads one plain sentence that says what to do next. Argument errors name the fields
and the rule they broke, never the rejected values (they may be huge, or private).
"""

import logging
import re
from typing import Any

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from memvm.engine.errors import MemvmError, PageNotFound
from pydantic import ValidationError

_MAX_FIELDS = 5
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,40}$")

logger = logging.getLogger("memvm")


# The JSON type a strict check wanted, by pydantic's error type.
_EXPECTED = {
    "int_type": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "dict_type": "a JSON object",
    "model_type": "a JSON object",
    "list_type": "a list",
}
_WRITTEN_BARE = {"int_type", "float_type", "bool_type"}


def describe_validation(tool: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors()[:_MAX_FIELDS]:
        field = ".".join(_field_part(part) for part in item["loc"]) or "arguments"
        if item["type"] == "extra_forbidden":
            problems.append(f"{field} is not an accepted argument")
            continue
        rule = _rule_broken(item["type"], item["msg"], item.get("input"), item.get("ctx"))
        problems.append(f"{field}: {rule}")
    more = error.error_count() - len(problems)
    if more > 0:
        problems.append(f"and {more} more")
    return f"Invalid arguments for {tool} ({'; '.join(problems)}); fix them and call {tool} again."


# Every name pattern in memvm's arguments has this shape: a first character, then more, up to a length.
_NAME_SHAPE = re.compile(
    r"\^(?P<dollar>\\\$\?)?\[(?P<first>[^\]]+)\]\[(?P<rest>[^\]]+)\]\{0,(?P<more>\d+)\}\$"
)


def _characters(cls: str) -> list[str]:
    """A regex character class as words: "A-Za-z0-9_.:\\-" -> ["letters", "digits", "_", ".", ":", "-"]."""
    kinds = [word for token, word in (("A-Z", "letters"), ("0-9", "digits")) if token in cls]
    rest = cls.replace("A-Z", "").replace("a-z", "").replace("0-9", "").replace("\\", "")
    return kinds + list(rest)


def _pattern_words(pattern: str) -> str | None:
    shape = _NAME_SHAPE.fullmatch(pattern)
    if shape is None:
        return None
    allowed = _characters(shape["rest"])
    first = [
        word.removesuffix("s") if word in ("letters", "digits") else word
        for word in _characters(shape["first"])
    ]
    dollar = " after an optional $" if shape["dollar"] else ""
    return (
        f"must be 1 to {int(shape['more']) + 1} characters ({', '.join(allowed[:-1])} and {allowed[-1]}), "
        f"starting with a {', '.join(first[:-1])} or {first[-1]}{dollar}"
    )


def _rule_broken(error_type: str, message: str, value: object, context: dict[str, Any] | None) -> str:
    if error_type == "string_pattern_mismatch" and context is not None:
        words = _pattern_words(str(context.get("pattern", "")))
        if words is not None:
            return words
    expected = _EXPECTED.get(error_type)
    if expected is None:
        message = message.removeprefix("Value error, ").replace("Input should be", "must be", 1)
        return f"{message[:1].lower()}{message[1:]}"
    if isinstance(value, str) and error_type in _WRITTEN_BARE:
        # The commonest slip: a number or boolean sent as text, like "5" or "true".
        return f"must be {expected} written without quotes, not a string"
    return f"must be {expected}, not {_json_type(value)}"


def _json_type(value: object) -> str:
    # The type of what was sent, never the value (it may be huge, or private).
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    return "a JSON object"


def _field_part(part: str | int) -> str:
    # A key the caller made up is input too: name it only when it is a short, plain name.
    text = str(part)
    return text if _PLAIN_NAME.fullmatch(text) else "<key>"


def tool_error(tool: str, exc: BaseException) -> ToolError:
    """The tool error the model should read for `exc`.

    Anything unforeseen is a bug: its text (which may hold SQL or a path) goes to the log, and the
    model reads one fixed sentence. Writes run in transactions, so nothing was half-done.
    """
    if isinstance(exc, ValidationError):
        return ToolError(describe_validation(tool, exc))
    if isinstance(exc, MemvmError):
        return ToolError(str(exc))
    logger.error("internal error in %s", tool, exc_info=exc)
    return ToolError(
        f"memvm could not complete {tool} because of an internal error, and nothing was changed; "
        "retry once, then carry on without it."
    )


def resource_error(exc: MemvmError) -> ResourceError:
    if isinstance(exc, PageNotFound):
        return ResourceNotFoundError(str(exc))
    return ResourceError(str(exc))
