"""Argument types shared by the tools: bounds live in the schema, so clients see them."""

import json
from typing import Annotated, Any

from memvm.engine.guards.references import ALIAS_PATTERN
from memvm.engine.models.pages import Modality, PageType, Role
from memvm.engine.models.procedures import Outcome
from memvm.engine.models.recall import SearchScope
from memvm.engine.names import ID_PATTERN, NAME_PATTERN, TOOL_NAME_PATTERN
from memvm.resources.rules import MODE_MEANINGS, RuleMode
from pydantic import AfterValidator, Field

MAX_CONTENT_CHARS = 1_000_000
MAX_JSON_CHARS = 1_000_000
MAX_ARGUMENT_KEYS = 1_000  # top-level arguments of one tool call; the size cap bounds the rest


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
    Field(pattern=ID_PATTERN, description="A page id from search_pages or the conversation."),
]
Key = Annotated[
    str,
    Field(
        pattern=ID_PATTERN,
        description="A stable name for this memory, which becomes its page id: remembering the same key "
        "again updates that page instead of adding one.",
    ),
]
SessionName = Annotated[
    str | None,
    Field(
        pattern=NAME_PATTERN,
        # A model that makes a name up ("current") would work in a session nobody renders.
        description="One conversation inside the memory. Leave it out to use this connection's own "
        "session. Pages of every session stay searchable; a new name starts a new, "
        "empty session that your host does not show, while its page loads "
        "and guard budgets still count in your own session.",
    ),
]
# Described where it is used: the same text is a memory to keep or a message said.
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS), AfterValidator(_storable)]
Query = Annotated[
    str,
    Field(
        max_length=2_000,
        description="What to look for, in plain words; empty lists what is remembered: pinned first, then newest.",
    ),
    AfterValidator(_storable),
]
Summary = Annotated[
    str | None,
    Field(max_length=4_000, description="Your own short summary; it becomes the page's abstract (level 2)."),
    AfterValidator(_optional_storable),
]
SystemPrompt = Annotated[
    str | None,
    Field(max_length=200_000, description="A system prompt to put first in the message."),
    AfterValidator(_optional_storable),
]
ErrorType = Annotated[
    str | None,
    Field(max_length=200, description="The error's name or code, if it has one."),
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
SpeakerName = Annotated[
    str | None,
    Field(max_length=64, description="The speaker's name, if any."),
    AfterValidator(_optional_storable),
]


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


ToolName = Annotated[str, Field(pattern=TOOL_NAME_PATTERN, description="The tool's name.")]
ToolArguments = Annotated[
    dict[str, Any],
    Field(
        max_length=MAX_ARGUMENT_KEYS,
        description="The call's arguments: the JSON object the tool takes.",
    ),
    AfterValidator(_storable_json),
]
ToolValue = Annotated[
    Any,
    Field(description=f"The tool's result, any JSON value (at most {MAX_JSON_CHARS:,} characters as JSON)."),
    AfterValidator(_storable_json),
]
AliasName = Annotated[
    str | None,
    Field(
        pattern=ALIAS_PATTERN,
        description="A name like 'total' to pass it as $total too; the name moves to the latest value "
        "bound under it.",
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
ContextMode = Annotated[RuleMode, BY_VALUE, Field(description=MODE_MEANINGS)]
SpeakerRole = Annotated[Role, BY_VALUE, Field(description="Who said it.")]
