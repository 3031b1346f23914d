"""Server settings: where the database is, whose it is, and which tools the model sees."""

import os
import sys
from enum import StrEnum
from pathlib import Path

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
    engine: EngineConfig = Field(default_factory=EngineConfig)
    # token -> namespace, for the HTTP transports; None serves the process's namespace to all.
    tokens: dict[str, str] | None = Field(None, repr=False)


def default_db_path() -> Path:
    """$MEMVM_DB, else memvm.db in the per-user data directory of this platform."""
    if env := os.environ.get("MEMVM_DB"):
        return Path(env)
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    else:
        base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
    return base / "memvm" / "memvm.db"
