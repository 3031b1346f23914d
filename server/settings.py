"""Server settings: how clients connect, where the database is, whose it is, and which tools the
model sees."""

from enum import StrEnum

from memvm.engine.config import EngineConfig
from memvm.engine.names import NAME_PATTERN
from pydantic import BaseModel, ConfigDict, Field


class Transport(StrEnum):
    STDIO = "stdio"
    SSE = "sse"
    STREAMABLE_HTTP = "streamable-http"


class ToolProfile(StrEnum):
    MODEL = "model"  # what a model should see: paging, search and remember
    ALL = "all"  # plus the host-facing tools, for agent loops that manage the conversation

    @property
    def host_managed(self) -> bool:
        """Whether the host marks turns (begin_turn, ingest) and puts the working set in the prompt
        (build_context). Desktop hosts do neither: they only pass tool replies to the model, so
        nothing it is told may rest on a turn or a working set it never sees."""
        return self is ToolProfile.ALL


class ServerSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    db: str
    namespace: str = Field("default", pattern=NAME_PATTERN)
    session: str = Field("default", pattern=NAME_PATTERN)
    tools: ToolProfile = ToolProfile.MODEL
    # The work tree this process keeps apart; None serves every project's pages.
    project: str | None = None
    engine: EngineConfig = Field(default_factory=EngineConfig)
    # token -> namespace, for the HTTP transports; None serves the process's namespace to all.
    tokens: dict[str, str] | None = Field(None, repr=False)
