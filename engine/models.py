"""The engine's vocabulary: closed sets as enums, results as pydantic models."""

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


class SearchScope(StrEnum):
    ALL = "all"
    SESSION = "session"


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


class SessionState(BaseModel):
    namespace: str
    session: str
    turn: int
    faults_this_turn: int
    turn_started_at: float
    last_call_at: float
    # Its current turn was not started by the host (see engine.sessions).
    ad_hoc: bool = False


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


class TurnResult(BaseModel):
    turn: int
    faults_left: int


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


class ValueType(StrEnum):
    NUMBER = "number"
    STRING = "string"
    BOOLEAN = "boolean"
    LIST = "list"
    OBJECT = "object"
    # A value taken from a tool result that was forgotten: its number stays taken, its value is
    # gone (stored as JSON null), and a reference to it resolves to nothing.
    FORGOTTEN = "forgotten"


class GroundingVerdict(StrEnum):
    GROUNDED = "grounded"
    UNGROUNDED = "ungrounded"
    MISSING_REFS = "missing_refs"


class CallVerdict(StrEnum):
    ALLOW = "allow"
    WARN = "warn"
    BLOCK = "block"


class GuardRule(StrEnum):
    MISSING_REFS = "missing_refs"
    UNGROUNDED = "ungrounded"
    COPIED_VALUE = "copied_value"  # a literal equal to a bound value: pass its reference instead
    BUDGET = "budget"
    TOOL_CAP = "tool_cap"
    REPEAT = "repeat"
    LOOP = "loop"
    RUNAWAY = "runaway"


class BindResult(BaseModel):
    ref: str = Field(description="The reference to pass in later tool arguments, like $v3.")
    aliases: list[str] = Field(description="Other names for the same value, like $total.")
    value_type: ValueType
    created: bool = Field(description="False when this exact call and value were bound already.")


class UngroundedLiteral(BaseModel):
    path: str = Field(description="Where the number is in the arguments, like items[2].price.")
    value: int | float | str
    suggestion: str | None = Field(description="The reference holding this value, when one does.")


class GroundingResult(BaseModel):
    verdict: GroundingVerdict
    ungrounded: list[UngroundedLiteral]
    missing_refs: list[str]
    unreadable_refs: dict[str, str] = Field(
        default_factory=dict,
        description="Of missing_refs, those naming a part the bound value lacks, with what it has.",
    )
    resolved_args: Any = Field(
        description="The arguments with every reference replaced; null while a reference is missing."
    )
    user_messages_on_record: bool = Field(
        description="Whether the host has recorded this session's user messages, whose numbers count as sourced."
    )
    message: str


class GuardReason(BaseModel):
    rule: GuardRule
    severity: CallVerdict
    message: str


class CallBudget(BaseModel):
    kind: str = Field(
        description="discovery or execution, counted apart; workspace (an agent host's own tools) has no budget."
    )
    used: int
    limit: int = Field(description="Calls of this kind allowed this turn; 0 means no limit.")


class ToolCallCheck(BaseModel):
    verdict: CallVerdict
    reasons: list[GuardReason]
    cached_result: Any = Field(
        None, description="The result of the same call earlier this turn: use it instead of calling again."
    )
    cached_ref: str | None = None
    resolved_args: Any
    budget: CallBudget
    turn: int


class Outcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


# Outcomes that carry an error worth learning from. A cancelled call says nothing about the tool.
ERROR_OUTCOMES = frozenset({Outcome.FAILURE, Outcome.PARTIAL, Outcome.TIMEOUT})


class ToolOutcome(BaseModel):
    """One finished tool call, as the host or the model reports it."""

    tool: str
    args: dict[str, Any]
    outcome: Outcome
    result: Any = None
    error_type: str | None = None
    error_message: str | None = None
    duration_ms: float | None = None
    goal: str | None = None


class FixLink(BaseModel):
    fixed_call_id: int = Field(description="The failed call this success fixed.")
    delta: dict[str, Any] = Field(
        description="What changed in the arguments: added, removed, changed{from, to}."
    )


class OutcomeResult(BaseModel):
    call_id: int
    fix: FixLink | None
    ref: str | None = Field(description="The result's reference ($vN) when it was bound.")
    page_id: str | None = Field(
        description="The tool_result page holding a large result; page_fault loads it."
    )
    runaway: str | None = Field(description="Why this tool's results look runaway, or null.")


class ErrorHint(BaseModel):
    error_type: str
    count: int
    example: str | None
    last_call_id: int
    last_at: float
    typical_fix: dict[str, Any] | None
    typical_fix_text: str | None
    fix_call_id: int | None
    fix_count: int


class SuccessHint(BaseModel):
    arg: str
    value: Any
    count: int
    goal: str | None
    last_call_id: int


class RecentCall(BaseModel):
    call_id: int
    outcome: Outcome
    session: str
    at: float
    error_type: str | None
    fixed_by: int | None


class ToolHints(BaseModel):
    tool: str
    calls: int
    success_rate: float
    mean_duration_ms: float | None
    last_at: float
    common_errors: list[ErrorHint]
    success_hints: list[SuccessHint]
    recent: list[RecentCall]


class FixGuidance(BaseModel):
    """A failure with this error, and the call that fixed it."""

    tool: str
    error_type: str
    failed_call_id: int
    fixed_call_id: int
    session: str
    at: float
    delta: dict[str, Any]
    description: str


class ProceduralKnowledge(BaseModel):
    tools: list[ToolHints]
    guidance: list[FixGuidance]


class HandledHookEvent(BaseModel):
    """A host hook event handled before: its name and, for a decision, the answer given."""

    event: str
    answer: str | None
