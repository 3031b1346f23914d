"""Engine errors and argument errors become tool errors here, and only here.

The model reads one plain sentence that says what to do next. Argument errors name the fields
and the rule they broke, never the rejected values (they may be huge, or private).
"""

import logging
import re

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from memvm.engine.errors import MemvmError, PageNotFound
from pydantic import ValidationError

_MAX_FIELDS = 5
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,40}$")

logger = logging.getLogger("memvm")


def describe_validation(tool: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors()[:_MAX_FIELDS]:
        field = ".".join(_field_part(part) for part in item["loc"]) or "arguments"
        if item["type"] == "extra_forbidden":
            problems.append(f"{field} is not an accepted argument")
            continue
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{field}: {message[:1].lower()}{message[1:]}")
    more = error.error_count() - len(problems)
    if more > 0:
        problems.append(f"and {more} more")
    return f"Invalid arguments for {tool} ({'; '.join(problems)}); fix them and call {tool} again."


def _field_part(part: str | int) -> str:
    # A key the caller made up is input too: name it only when it is a short, plain name.
    text = str(part)
    return text if _PLAIN_NAME.match(text) else "<key>"


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
