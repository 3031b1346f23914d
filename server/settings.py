"""Server settings: where the database is, whose it is, and which tools the model sees."""

from enum import StrEnum

from memvm.engine.config import EngineConfig
from memvm.engine.names import NAME_PATTERN
from pydantic import BaseModel, ConfigDict, Field


class ToolProfile(StrEnum):
    MODEL = "model"  # what a model should see: paging, search and remember
    ALL = "all"  # plus the host-facing tools, for agent loops that manage the conversation


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
