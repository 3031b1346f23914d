"""Working sets: which pages are in context at which level, the log of what changed them, faults
and evictions, and the manifest of what is left out."""

from enum import StrEnum

from memvm.engine.models.pages import Level, Modality, PageType, Role
from pydantic import BaseModel, Field


class MutationKind(StrEnum):
    MAP = "map"
    PROMOTE = "promote"
    DEMOTE = "demote"
    UNMAP = "unmap"
    PIN = "pin"
    UNPIN = "unpin"
    FORGET = "forget"


class Actor(StrEnum):
    MODEL = "model"
    HOST = "host"
    ENGINE = "engine"


class Mapping(BaseModel):
    """A page in a working set: at which level, and what its context line costs."""

    page_id: str
    rowid: int
    level: Level
    line_tokens: int
    pinned: bool
    faulted_turn: int | None
    last_access_turn: int
    page_type: PageType
    importance: float
    last_access: float


class WorkingSetEntry(BaseModel):
    page_id: str
    level: int
    tokens: int
    line: str


class WorkingSetView(BaseModel):
    """A session's working set as rendered: one line per mapped page, in a stable order."""

    session: str
    turn: int
    entries: list[WorkingSetEntry]
    page_tokens: int
    budget_tokens: int
    reserved_tokens: int
    faults_left: int
    max_faults_per_turn: int


class EvictedPage(BaseModel):
    page_id: str
    level_before: int
    level_after: int | None = Field(description="The coarser level it was demoted to; null when unmapped.")


class FaultResult(BaseModel):
    page_id: str
    level: int | None = Field(
        description="The level of `content`: the one asked for, a coarser one when that did not fit, "
        "or null when no level fits (content is then empty)."
    )
    requested_level: int
    content: str
    tokens: int
    type: PageType
    role: Role | None
    modality: Modality
    session: str = Field(description="The session the page was written in.")
    working_set_session: str = Field(description="The session whose working set the page was loaded into.")
    created_at: float
    provenance: str
    mapped: bool
    already_mapped: bool
    reason: str | None = Field(None, description="Why the page is not in context at the level asked for.")
    notice: str | None = Field(None, description="Something about this call worth knowing (a new session).")
    evicted: list[EvictedPage]
    faults_left: int
    working_set_tokens: int = Field(description="Reserved tokens plus the page lines now in context.")
    reserved_tokens: int = Field(description="Set aside within the budget for the rules and the manifest.")
    page_budget_tokens: int = Field(description="What is left for page lines: budget minus reserve.")
    budget_tokens: int


class ManifestPage(BaseModel):
    page_id: str
    type: PageType
    role: Role | None
    session: str
    hint: str
    tokens: dict[str, int]
    importance: float
    pinned: bool = False


class MemoryMap(BaseModel):
    """What the manifest is made of, read from one snapshot."""

    view: WorkingSetView
    available: list[ManifestPage]
    counts: dict[str, int]
