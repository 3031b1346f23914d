"""The page: its type, who wrote it, its modality, its four levels and their token counts, and what
a writer hands the engine."""

from enum import IntEnum, StrEnum
from typing import Any

from pydantic import BaseModel, Field


class PageType(StrEnum):
    TRANSCRIPT = "transcript"
    TOOL_RESULT = "tool_result"
    CLAIM = "claim"
    NOTE = "note"
    PREFERENCE = "preference"
    SUMMARY = "summary"
    PROCEDURE = "procedure"


# Pages the model writes itself through `remember`; transcripts and tool results come from the host.
REMEMBERED_TYPES = frozenset(
    {PageType.CLAIM, PageType.NOTE, PageType.PREFERENCE, PageType.SUMMARY, PageType.PROCEDURE}
)


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Modality(StrEnum):
    TEXT = "text"
    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
    STRUCTURED = "structured"


class Level(IntEnum):
    """Levels of detail, finest first: a smaller number is more text."""

    FULL = 0
    REDUCED = 1
    ABSTRACT = 2
    REFERENCE = 3


class LevelTokens(BaseModel):
    """Exact token counts of a page at each level, keyed '0'..'3' like the level numbers."""

    full: int
    reduced: int
    abstract: int
    reference: int

    def at(self, level: Level) -> int:
        return (self.full, self.reduced, self.abstract, self.reference)[level]

    def as_dict(self) -> dict[str, int]:
        return {"0": self.full, "1": self.reduced, "2": self.abstract, "3": self.reference}


class PageVersion(BaseModel):
    """What a keyed page said before a rewrite replaced it (see paging/versions.py)."""

    version: int
    type: PageType
    content: str
    tokens_full: int
    written_at: float
    superseded_at: float


class Page(BaseModel):
    """One stored page with all four levels."""

    rowid: int
    page_id: str
    session: str
    type: PageType
    role: Role | None
    modality: Modality
    importance: float
    pinned: bool
    provenance: str
    created_at: float
    last_access: float
    access_count: int
    turn: int
    metadata: dict[str, Any]
    levels: tuple[str, str, str, str]
    tokens: LevelTokens
    expires_at: float | None = None
    project: str = ""  # the project it was written in; '' for every project (see paging/projects.py)
    # Filled where one page is read whole (Engine.get_page): its version now, and what it said
    # before, oldest first.
    version: int = 1
    versions: list[PageVersion] = Field(default_factory=list)

    def content(self, level: Level) -> str:
        return self.levels[level]


class NewPage(BaseModel):
    """What a writer hands the engine; levels and token counts are computed from it."""

    content: str
    type: PageType
    role: Role | None = None
    modality: Modality = Modality.TEXT
    importance: float = 0.5
    pinned: bool = False
    provenance: str
    summary: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
