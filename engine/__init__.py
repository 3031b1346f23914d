"""memvm's engine: pages, levels, working sets, faults, search, guards and procedural memory,
on SQLite or PostgreSQL behind one storage seam (engine/storage/).

Never imports mcp: the server wraps this package, never the other way round. `Engine` and
`EngineConfig` load on first use, so that a light module of the engine (paths, the hook journal)
can be imported by the hook's client without paying for the whole engine.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memvm.engine.config import EngineConfig
    from memvm.engine.engine import Engine

__all__ = ["Engine", "EngineConfig"]


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from memvm.engine.engine import Engine

        return Engine
    if name == "EngineConfig":
        from memvm.engine.config import EngineConfig

        return EngineConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
