"""Argument types shared by the tools: bounds live in the schema, so clients see them."""

import json
from typing import Annotated, Any

from memvm.engine.models import Modality, Outcome, PageType, Role, SearchScope
from memvm.engine.references import ALIAS_PATTERN
from memvm.resources.rules import RuleMode
from memvm.server.settings import NAME_PATTERN
from pydantic import AfterValidator, Field

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"
MAX_CONTENT_CHARS = 1_000_000
MAX_JSON_CHARS = 1_000_000
MAX_ARGUMENT_KEYS = 1_000  # top-level arguments of one tool call; the size cap bounds the rest
# MCP tool names, plus the separators hosts use to prefix a server's name ("github/create_issue").
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:/\-]{0,127}$"


def _storable(text: str) -> str:
    # A lone surrogate cannot be stored as UTF-8, and NUL cuts text short in many readers.
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return text


def _optional_storable(text: str | None) -> str | None:
    return None if text is None else _storable(text)


PageId = Annotated[
    str,
    Field(pattern=ID_PATTERN, description="A page id from search_pages, the manifest or the context."),
]
Key = Annotated[
    str,
    Field(
        pattern=ID_PATTERN,
        description="A stable name for this memory (letters, digits, _ . : -); remembering the same key "
        "again updates that page instead of adding one. It becomes the page id.",
    ),
]
SessionName = Annotated[
    str | None,
    Field(
        pattern=NAME_PATTERN,
        description="The conversation to act in; omit it to use this connection's session.",
    ),
]
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS), AfterValidator(_storable)]
Query = Annotated[
    str,
    Field(min_length=1, max_length=2_000, description="What to look for, in plain words."),
    AfterValidator(_storable),
]
Summary = Annotated[
    str | None,
    Field(max_length=4_000, description="Your own short summary; it becomes the page's abstract (level 2)."),
    AfterValidator(_optional_storable),
]
SystemPrompt = Annotated[str | None, Field(max_length=200_000), AfterValidator(_optional_storable)]
ErrorType = Annotated[
    str | None,
    Field(max_length=200, description="The error's name, if it has one (an exception class, an error code)."),
    AfterValidator(_optional_storable),
]
ErrorMessage = Annotated[
    str | None,
    Field(max_length=4_000, description="The error text the tool returned."),
    AfterValidator(_optional_storable),
]
Goal = Annotated[
    str | None,
    Field(max_length=500, description="What the call was for, in a few words."),
    AfterValidator(_optional_storable),
]
SpeakerName = Annotated[str | None, Field(max_length=64), AfterValidator(_optional_storable)]


def _storable_json(value: Any) -> Any:
    # Every string and key must be storable text, and the whole value must fit in a page.
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ValueError("must be JSON: NaN and infinity are not JSON numbers") from None
    if len(text) > MAX_JSON_CHARS:
        raise ValueError(f"must be at most {MAX_JSON_CHARS} characters as JSON")
    _storable(text)
    return value


ToolName = Annotated[
    str, Field(pattern=TOOL_NAME_PATTERN, description="The name of the tool that is called (or was).")
]
ToolArguments = Annotated[
    dict[str, Any],
    Field(
        max_length=MAX_ARGUMENT_KEYS,
        description="The tool call's arguments, as the JSON object you would send the tool "
        f"(at most {MAX_JSON_CHARS:,} characters as JSON).",
    ),
    AfterValidator(_storable_json),
]
ToolValue = Annotated[
    Any,
    Field(
        description="The tool's result: a number, string, boolean, list or object "
        f"(at most {MAX_JSON_CHARS:,} characters as JSON; no NaN or infinity)."
    ),
    AfterValidator(_storable_json),
]
AliasName = Annotated[
    str | None,
    Field(
        pattern=ALIAS_PATTERN,
        description="A name for the value (like 'total'), usable as $total; it moves to the latest value bound under it.",
    ),
]

# Arguments are validated strictly (memvm.server.strict_arguments), and strict validation of a
# Python value wants an enum member, while JSON brings the member's value. An enum's lax validation
# takes exactly those values and converts nothing else, so enum arguments are validated lax.
BY_VALUE = Field(strict=False)

ModalityFilter = Annotated[Modality | None, BY_VALUE, Field(description="Only pages of this modality.")]
PageTypeFilter = Annotated[PageType | None, BY_VALUE, Field(description="Only pages of this type.")]
Scope = Annotated[
    SearchScope,
    BY_VALUE,
    Field(description="'all' searches every conversation's pages; 'session' only this one."),
]
CallOutcome = Annotated[Outcome, BY_VALUE, Field(description="How the call ended.")]
ContextMode = Annotated[
    RuleMode, BY_VALUE, Field(description="How firmly the rules ask the model to use memory.")
]
SpeakerRole = Annotated[Role, BY_VALUE, Field(description="Who said it.")]
