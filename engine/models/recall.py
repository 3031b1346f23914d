"""What reading memory back returns: search hits, the standing notes a new session lists, and a
session's transcript."""

from enum import StrEnum
from typing import Literal

from memvm.engine.models.pages import Modality, PageType, Role
from pydantic import BaseModel, Field


class SearchScope(StrEnum):
    ALL = "all"
    SESSION = "session"


class SearchHit(BaseModel):
    page_id: str
    type: PageType
    role: Role | None
    modality: Modality
    session: str
    created_at: float
    snippet: str
    score: float
    tokens: dict[str, int]
    mapped: bool
    level: int | None
    project: str | None = Field(None, description="The project it came from, when not this one.")
    matched: Literal["words", "meaning", "both"] | None = Field(
        None,
        description="What matched the query: its words, its meaning, or both; none for an exact page id.",
    )


class StandingNote(BaseModel):
    """A page a new session would want before any prompt: pinned, or a remembered note."""

    page_id: str
    type: PageType
    role: Role | None
    session: str
    created_at: float
    pinned: bool
    abstract: str
    project: str | None = None  # the project it came from, when not the reader's own


class TranscriptText(BaseModel):
    """One transcript page of a session: who said it, and the text as stored (redacted)."""

    role: Role
    content: str


class SearchResult(BaseModel):
    results: list[SearchHit]
    total_pages: int
    message: str | None = Field(None, description="Set when nothing was found: why, and what to try instead.")
    note: str | None = Field(None, description="Set when search matched words only: why.")
