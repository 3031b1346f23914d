"""Context for the host, built from memory: a header that frames everything as data, then
sections of one-line records, all within a token cap counted exactly."""

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from memvm.engine.models.pages import PageType, Role
from memvm.engine.paging.framing import neutralise
from memvm.engine.paging.tokens import TokenCounter

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Section:
    title: str
    lines: list[str]
    # The part of the cap this section may take before the sections ahead of it have filled theirs.
    reserve: float = 0.0


def one_line(text: str) -> str:
    """Stored text as one line of data: whitespace folded, and no memvm tag it could spell."""
    return neutralise(_SPACE.sub(" ", text).strip())


def kind(page_type: PageType, role: Role | None) -> str:
    """A page's kind as a record line shows it: its type, and its role when it has one."""
    return page_type.value if role is None else f"{page_type.value}/{role.value}"


def day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def pack(counter: TokenCounter, header: str, sections: list[Section], max_tokens: int) -> str | None:
    """The header and as many lines of each section as fit in `max_tokens`, or None when no line
    fits at all (the header alone says nothing).

    Sections fill in order, except that a later section's `reserve` share of the cap is kept for it
    first, so a long first section cannot crowd a short later one out.
    """
    kept: list[list[str]] = [[] for _ in sections]

    def text() -> str:
        parts = [header]
        for section, lines in zip(sections, kept, strict=True):
            if lines:
                parts += [section.title, *lines]
        return "\n".join(parts)

    def fill(index: int, limit: int) -> None:
        for line in sections[index].lines[len(kept[index]) :]:
            kept[index].append(line)
            if counter.count(text()) > limit:
                kept[index].pop()
                return

    for index, section in enumerate(sections):
        if section.reserve:
            fill(index, min(max_tokens, counter.count(header) + int(max_tokens * section.reserve)))
    for index in range(len(sections)):
        fill(index, max_tokens)
    if not any(kept):
        return None
    return text()
