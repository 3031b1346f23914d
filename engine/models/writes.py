"""What the writes take and return: remember, ingest, pin and forget."""

from memvm.engine.models.pages import PageType, Role
from pydantic import BaseModel, Field


class RememberResult(BaseModel):
    page_id: str
    created: bool
    tokens: dict[str, int]
    mapped: bool | None = Field(
        None, description="For a pinned page: whether it is in your context now (null when not pinned)."
    )
    reason: str | None = Field(None, description="Why a pinned page is not in your context.")
    version: int = Field(
        1, description="The page's version now: 1 when new, one more each time a rewrite changed its content."
    )
    expires_at: float | None = Field(
        None, description="When the page expires (seconds since the epoch); null when it never does."
    )
    redacted: list[str] = Field(
        default_factory=list,
        description="Kinds of secret replaced by [REDACTED:kind] before storing (say so to the user).",
    )


class IngestMessage(BaseModel):
    role: Role
    content: str
    name: str | None = None


class IngestResult(BaseModel):
    page_ids: list[str]
    turn: int


class PageState(BaseModel):
    page_id: str
    session: str
    type: PageType
    pinned: bool
    importance: float
    mapped: bool
    level: int | None
    tokens: dict[str, int]


class ForgetResult(BaseModel):
    page_id: str
    deleted: bool
    purged: bool = Field(
        description="The text is also out of the storage's files: the search index merged and the "
        "WAL emptied (SQLite), the tables vacuumed (PostgreSQL). False when that could not finish "
        "now (a reader holding an older snapshot, a full disk); the next forget finishes it."
    )
