"""The one line a mapped page occupies in the packed context, and what it costs.

A line is its head (the role or type, and the page id) and its body (the text at the mapped
level, on one line, with memvm's tags escaped). What a page costs in the working set is the exact
token count of its line plus one for the newline that joins lines; a long page's body is counted
once, off the write lock.
"""

from collections.abc import Iterable, Sequence

from memvm.engine.models.pages import Level, Page, PageType, Role
from memvm.engine.paging.framing import neutralise
from memvm.engine.paging.levels import collapse
from memvm.engine.paging.tokens import TokenCounter

ROLE_PREFIX = {Role.USER: "U", Role.ASSISTANT: "A", Role.SYSTEM: "S", Role.TOOL: "T"}
TYPE_PREFIX = {
    PageType.TRANSCRIPT: "M",
    PageType.TOOL_RESULT: "T",
    PageType.CLAIM: "C",
    PageType.NOTE: "N",
    PageType.PREFERENCE: "P",
    PageType.SUMMARY: "SUM",
    PageType.PROCEDURE: "PROC",
}


def line_prefix(page_type: PageType, role: Role | None) -> str:
    if page_type is PageType.TRANSCRIPT and role is not None:
        return ROLE_PREFIX[role]
    return TYPE_PREFIX[page_type]


def line_head(page_id: str, page_type: PageType, role: Role | None) -> str:
    """The start of a page's context line: its role or type, and its id."""
    return f"{line_prefix(page_type, role)} {page_id}:"


def line_body(text: str) -> str:
    """The rest of the line: the text at the mapped level, on one line, with anything shaped like
    one of memvm's tags escaped (see framing): one line per page, so no text can pose as another
    page's line, and no page can end the context block.

    It starts with a space after the head's colon, where the tokenizer always starts a new piece,
    so a line's tokens are the head's plus the body's: a long page's body is counted once, before
    any lock is taken, and never again while the write lock is held.
    """
    return f" {neutralise(collapse(text))}"


def context_line(page_id: str, page_type: PageType, role: Role | None, text: str) -> str:
    """The one line a mapped page occupies in the packed context."""
    return line_head(page_id, page_type, role) + line_body(text)


# The tokens of a page's context-line body, per level.
Bodies = dict[Level, int]


def body_tokens(texts: Sequence[str], levels: Iterable[Level], counter: TokenCounter) -> Bodies:
    """The tokens of the line body at each of `levels` (see line_body), from the level `texts`:
    slow for a long page."""
    counted: dict[str, int] = {}
    found = {}
    for level in levels:
        text = texts[level]
        if text not in counted:
            counted[text] = counter.count(line_body(text))
        found[level] = counted[text]
    return found


def page_line(page: Page, level: Level) -> str:
    return context_line(page.page_id, page.type, page.role, page.content(level))


def line_cost(line_tokens: int) -> int:
    """Tokens a line adds to the context: the line and the newline that follows it."""
    return line_tokens + 1
