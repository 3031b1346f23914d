"""Shared fixtures: real SQLite files in a temporary directory, a manual clock, real MCP clients."""

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from memvm.engine import Engine, EngineConfig
from memvm.engine.clock import ManualClock
from memvm.engine.models import IngestMessage, NewPage, PageType, Role

NS = "default"

# Property tests check behaviour: hypothesis's 200 ms deadline per example and its too-slow health
# check are timings, which a busy machine fails.
settings.register_profile("memvm", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memvm")

EngineFactory = Callable[..., Awaitable[Engine]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memvm.db"


@pytest.fixture
async def open_engine(db_path: Path, clock: ManualClock) -> AsyncIterator[EngineFactory]:
    """Open engines on the test's database file; all are closed at the end of the test.

    Always open through here: an engine left open keeps its connection threads alive, and a test
    that fails before closing one would leave the whole run hanging at exit.
    """
    opened: list[Engine] = []

    async def factory(config: EngineConfig | None = None, **fields: Any) -> Engine:
        engine = await Engine.open(db_path, config or EngineConfig(**fields), clock=clock)
        opened.append(engine)
        return engine

    yield factory
    for engine in opened:
        await engine.close()


@pytest.fixture
async def engine(open_engine: EngineFactory) -> Engine:
    return await open_engine()


def note(content: str, **fields: Any) -> NewPage:
    return NewPage(content=content, type=fields.pop("type", PageType.NOTE), provenance="model", **fields)


def user(content: str) -> IngestMessage:
    return IngestMessage(role=Role.USER, content=content)


def assistant(content: str) -> IngestMessage:
    return IngestMessage(role=Role.ASSISTANT, content=content)


def long_text(topic: str, sentences: int = 12) -> str:
    """Realistic multi-sentence text about `topic`, long enough for the levels to differ."""
    parts = [
        f"The {topic} review started with a look at last quarter's numbers and the open questions.",
        f"Everyone agreed that the {topic} schedule slipped because two suppliers delivered late.",
        f"Maria proposed moving the {topic} launch to the second week of June to absorb the delay.",
        "The finance team asked for a revised budget that keeps the marketing spend flat.",
        f"Testing of the {topic} prototype found three defects, one of them in the power supply.",
        "The power supply defect needs a new part, which has a lead time of four weeks.",
        f"Customer interviews showed strong interest in the {topic} but worries about the price.",
        "A discount for early buyers was discussed and left for the next meeting.",
        f"Support staff will need two days of training before the {topic} goes on sale.",
        "The legal review of the warranty terms is still pending with the outside counsel.",
        f"Action items: Maria drafts the new {topic} plan, Tom orders the replacement part.",
        "The next review is set for Thursday at ten, in the large meeting room.",
    ]
    return " ".join(parts[i % len(parts)] for i in range(sentences))


# Figure lines of the reliability tests ("crash: trials=20 ... lost=0"), printed at the end of
# every run, passed or failed, where pytest would otherwise swallow a test's output.
_FIGURES: list[str] = []


@pytest.fixture
def report_figure() -> Callable[[str], None]:
    return _FIGURES.append


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _FIGURES:
        terminalreporter.write_line(line)
