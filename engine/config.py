"""Engine settings: one frozen model, passed in at open time."""

from enum import StrEnum

from memvm.engine.guard_config import GuardConfig
from pydantic import BaseModel, ConfigDict, Field


class Synchronous(StrEnum):
    """SQLite's `synchronous` setting. FULL survives power loss; NORMAL may lose the last commits."""

    FULL = "FULL"
    NORMAL = "NORMAL"


class EngineConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    encoding: str = "o200k_base"
    budget_tokens: int = Field(32_000, ge=1_000, le=2_000_000)
    # Tokens set aside inside the budget for what is sent besides the pages: the rules and the
    # manifest. The server computes it from the renderers; see memvm.resources.budget.
    reserved_tokens: int = Field(0, ge=0)
    max_faults_per_turn: int = Field(3, ge=1, le=100)
    turn_idle_seconds: float = Field(120.0, ge=1.0)
    manifest_max_tokens: int = Field(1_500, ge=200, le=50_000)
    manifest_max_pages: int = Field(40, ge=1, le=1_000)
    abstract_max_tokens: int = Field(48, ge=8, le=512)
    reference_max_tokens: int = Field(16, ge=4, le=64)
    max_page_tokens: int = Field(200_000, ge=1_000)
    # A recorded tool result this long (or longer) is kept as a tool_result page.
    result_page_tokens: int = Field(200, ge=1, le=100_000)
    busy_timeout_ms: int = Field(10_000, ge=0)
    synchronous: Synchronous = Synchronous.FULL
    # A quota on the database file: past it, writes fail with "storage full" (and nothing is
    # half-written) while reads, forget and the freed space go on working. None: only the disk's.
    max_db_mb: int | None = Field(None, ge=1)
    # Open the file read-only (SQLite mode=ro): reads work, every write is the "read-only" tool
    # error, and a file that still needs a migration is refused at start.
    read_only: bool = False
    guards: GuardConfig = Field(default_factory=GuardConfig)
