"""The limits of a setting, written beside its field and checked whenever settings are made.

`within(default, low=…, high=…)` is a dataclass field that carries its bounds; `check_limits`
(called from the settings' `__post_init__`) refuses a value past them with the words pydantic
would use, so that `memvm serve` says "budget-tokens must be greater than or equal to 1000"
whichever way the value came in.
"""

import math
from dataclasses import field, fields
from typing import Any


class UnusableSettings(ValueError):
    """Settings that cannot be used; the message says which and why."""


class SettingOutOfRange(UnusableSettings):
    """One setting past its bounds."""

    def __init__(self, name: str, bound: str) -> None:
        super().__init__(f"{name} must be {bound}")
        self.name = name
        self.bound = bound


def within(default: Any, *, low: float | None = None, high: float | None = None) -> Any:
    """A field whose value must lie in [low, high] (None: no bound on that side)."""
    return field(default=default, metadata={"limits": (low, high)})


def check_limits(settings: Any) -> None:
    """Refuse the first field of `settings` (a dataclass) whose value is past its limits."""
    for each in fields(settings):
        limits = each.metadata.get("limits")
        value = getattr(settings, each.name)
        if limits is None or value is None:
            continue
        low, high = limits
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise SettingOutOfRange(each.name, "a number")
        if low is not None and value < low:
            raise SettingOutOfRange(each.name, f"greater than or equal to {low}")
        if high is not None and value > high:
            raise SettingOutOfRange(each.name, f"less than or equal to {high}")
