"""Guard settings, and the three presets `memvm serve --guards` offers.

Beside config.py rather than in guards/: the engine's settings hold these, and storage reads the
engine's settings, so they must not sit on a capability that itself sits on storage.

Every limit counts per session and per turn, so a new user message gives the agent a fresh
allowance. A limit of 0 means the rule is off (never "nothing is allowed").
"""

import json
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from memvm.engine.settings_limits import SettingOutOfRange, check_limits, within


class GuardPreset(StrEnum):
    DEFAULT = "default"
    STRICT = "strict"
    RELAXED = "relaxed"


class ToolKind(StrEnum):
    """Discovery calls look things up; execution calls do the work. Budgets count them apart.

    Workspace calls are an agent host's own tools on the user's files and shell (read, edit,
    grep, run a command): their results change as the agent works, and a coding turn runs dozens
    of them, so they meet no budget, repeat, loop, runaway or ungrounded-number check; a cap named
    for one still applies.
    """

    DISCOVERY = "discovery"
    EXECUTION = "execution"
    WORKSPACE = "workspace"


# Names that usually mean "look something up". Only a fallback: the explicit lists win.
DISCOVERY_NAME_PATTERNS = (
    "search*",
    "*_search",
    "list*",
    "find*",
    "lookup*",
    "describe*",
    "get_*schema*",
    "*_schema",
)


@dataclass(frozen=True, kw_only=True)
class GuardConfig:
    # Per turn: how many discovery and execution calls may run. 0 = no limit.
    discovery_budget: int = within(8, low=0, high=10_000)
    execution_budget: int = within(15, low=0, high=10_000)
    # Which tools are which. Explicit names win over the name patterns.
    discovery_tools: frozenset[str] = frozenset()
    execution_tools: frozenset[str] = frozenset()
    discovery_patterns: tuple[str, ...] = DISCOVERY_NAME_PATTERNS
    # An agent host's own tools on the user's workspace (see ToolKind.WORKSPACE). `memvm hook`
    # fills in the host's; the explicit discovery and execution lists win over this one.
    workspace_tools: frozenset[str] = frozenset()
    # Of those, the ones that change the workspace (an edit, a write): the same command after one
    # is a new run. A workspace call that ran `workspace_repeats` times this turn with the same
    # result each time, and no edit between, is stopped the next time. 0 = off.
    editing_tools: frozenset[str] = frozenset()
    workspace_repeats: int = within(5, low=0, high=1_000)
    # Calls per turn of one tool. 0 = no cap, for the default and for a named tool alike.
    default_tool_cap: int = within(0, low=0, high=10_000)
    tool_caps: dict[str, int] = field(default_factory=dict)
    # A loop with varying arguments: more than `loop_max_calls` calls of one tool among the
    # last `loop_window` calls of the turn. 0 = off.
    loop_window: int = within(8, low=0, high=1_000)
    loop_max_calls: int = within(5, low=1, high=1_000)
    # Runaway results: the last `runaway_repeats` numeric results of a tool all equal. 0 = off.
    runaway_repeats: int = within(3, low=0, high=100)
    # Tools that are meant to be called again and again (job status, queues): no repeat, loop or
    # runaway check, and no cached answer. They still count against budgets and caps.
    polling_tools: frozenset[str] = frozenset()
    # Numbers that are structure, not data (an index, a page size): never called ungrounded.
    structural_constants: frozenset[float] = frozenset({-1, 0, 1, 2, 3, 4, 5, 10, 100})
    # How many warnings a rule gives per turn before it blocks. 0 = block at once.
    grace: int = within(1, low=0, high=1_000)
    # The tools (names or fnmatch patterns, matched without case) for which an ungrounded number
    # denies the call at once: payments, deletes, messages sent. For every other tool it only warns.
    # None: every tool, with the grace above, as for a server whose model checks its own calls;
    # a host's hook starts from none (`memvm hook` passes []), so ordinary work is never denied.
    consequential_tools: tuple[str, ...] | None = None
    # Whether the model whose calls are checked has memvm's own tools (bind_value, check_tool_call,
    # page_fault) and the `$vN` references they make, as a model served by `memvm serve` does. A
    # host's model under `memvm hook` has none (the hook sets this false): the host runs each call
    # as written, so `$v1` in its arguments is plain text, a number it read in a result is grounded
    # with no reference to offer, and no reason names a tool it cannot call. The caller shows a
    # repeated call's earlier result after the reasons, as the hook does.
    memvm_tools: bool = True

    def __post_init__(self) -> None:
        check_limits(self)

    @classmethod
    def preset(cls, preset: GuardPreset) -> "GuardConfig":
        return cls(**_PRESETS[preset])

    def kind_of(self, tool: str) -> ToolKind:
        if tool in self.discovery_tools:
            return ToolKind.DISCOVERY
        if tool in self.execution_tools:
            return ToolKind.EXECUTION
        if tool in self.workspace_tools:
            return ToolKind.WORKSPACE
        lowered = tool.lower()
        if any(fnmatchcase(lowered, pattern) for pattern in self.discovery_patterns):
            return ToolKind.DISCOVERY
        return ToolKind.EXECUTION

    def consequential(self, tool: str) -> bool | None:
        """Whether an ungrounded number in a call of `tool` denies it at once (True), only warns
        (False), or strikes with the grace as any rule does (None: no list is set)."""
        if self.consequential_tools is None:
            return None
        lowered = tool.lower()
        return any(fnmatchcase(lowered, pattern.lower()) for pattern in self.consequential_tools)

    def budget_for(self, kind: ToolKind) -> int:
        """Calls of `kind` allowed per turn; 0 = no limit."""
        if kind is ToolKind.WORKSPACE:
            return 0
        return self.discovery_budget if kind is ToolKind.DISCOVERY else self.execution_budget

    def cap_for(self, tool: str) -> int:
        return self.tool_caps.get(tool, self.default_tool_cap)


_PRESETS: dict[GuardPreset, dict[str, Any]] = {
    GuardPreset.DEFAULT: {},
    GuardPreset.STRICT: {
        "discovery_budget": 5,
        "execution_budget": 10,
        "default_tool_cap": 5,
        "loop_window": 6,
        "loop_max_calls": 3,
        "runaway_repeats": 2,
        "structural_constants": frozenset({0, 1}),
        "grace": 0,
    },
    GuardPreset.RELAXED: {
        "discovery_budget": 25,
        "execution_budget": 50,
        "loop_window": 12,
        "loop_max_calls": 8,
        "runaway_repeats": 5,
        "structural_constants": frozenset({-1, 0, 1, 2, 3, 4, 5, 10, 20, 50, 100, 1000}),
        "grace": 3,
    },
}


class GuardConfigError(Exception):
    """A guard settings file that cannot be used; the message says which and why."""


def load_guard_config(preset: str, path: str | None, under: dict[str, object] | None = None) -> GuardConfig:
    """The preset, with `under` over it, and the settings in the JSON object at `path` over both."""
    chosen = GuardConfig.preset(GuardPreset(preset))
    if under:
        chosen = replace(chosen, **under)  # type: ignore[arg-type]  # the caller's own, typed settings
    if not path:
        return chosen
    try:
        overrides = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GuardConfigError(f"cannot read the guard config {path}: {exc}") from exc
    if not isinstance(overrides, dict):
        raise GuardConfigError(f"the guard config {path} must hold a JSON object")
    unknown = sorted(set(overrides) - {each.name for each in fields(GuardConfig)})
    if unknown:
        raise GuardConfigError(f"invalid guard settings in {path} ({', '.join(unknown)})")
    return _read(path, {**asdict(chosen), **overrides})


def _read(path: str, settings: dict[str, Any]) -> GuardConfig:
    """Settings from a file, each read as its field's type (a list as a set of names...)."""
    # Only a settings file needs pydantic: imported here, so that a hook without one never does.
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(GuardConfig).validate_python(settings)
    except ValidationError as exc:
        fields_at_fault = ", ".join(_field_at_fault(error) for error in exc.errors())
        raise GuardConfigError(f"invalid guard settings in {path} ({fields_at_fault})") from exc


def _field_at_fault(error: Any) -> str:
    out_of_range = (error.get("ctx") or {}).get("error")
    if isinstance(out_of_range, SettingOutOfRange):
        return out_of_range.name
    return ".".join(str(part) for part in error["loc"])
