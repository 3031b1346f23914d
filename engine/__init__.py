"""memvm's storage engine: pages, levels, working sets, faults and search on one SQLite file.

Never imports mcp: the server wraps this package, never the other way round.
"""

from memvm.engine.config import EngineConfig
from memvm.engine.engine import Engine

__all__ = ["Engine", "EngineConfig"]
