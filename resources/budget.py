"""What the budget reserves besides pages: the largest rules block, the manifest cap and framing.

The engine counts page lines exactly; this adds the rest of what a developer message carries, so
that the whole message (without the host's own system prompt) stays within `budget_tokens`. The
reserve is known from the settings alone, before an engine is built: counting it at each start
would wait for the encoding, a few tenths of a second the first requests should not pay.
"""

from collections.abc import Callable
from dataclasses import replace

from memvm.engine.config import EngineConfig
from memvm.resources.context import CONTEXT_CLOSE, CONTEXT_OPEN, SECTION_SEPARATOR
from memvm.resources.manifest import MANIFEST_CLOSE, MANIFEST_OPEN
from memvm.resources.rules import RuleMode, rules_text

# What the longest rules block, the framing and the section joints count to in each encoding,
# besides the manifest's own cap. The texts are fixed (the number of faults a turn allows is one
# token at any setting), so they are counted here once; tests/resources/test_budget.py counts them
# again at every setting and fails, naming the new figure, when a change to the texts makes these
# stale.
FIXED_TOKENS = {"o200k_base": 277, "cl100k_base": 275}


def counted_reserve(config: EngineConfig, count: Callable[[str], int]) -> int:
    """The reserve as `count` counts the texts memvm's renderers send with `config`."""
    rules = max(count(rules_text(mode, max_faults_per_turn=config.max_faults_per_turn)) for mode in RuleMode)
    framing = count(
        SECTION_SEPARATOR.join(
            [f"{MANIFEST_OPEN}\n\n{MANIFEST_CLOSE}", f"{CONTEXT_OPEN}\n\n{CONTEXT_CLOSE}", ""]
        )
    )
    # One token per joint can merge differently at section edges: count each generously.
    return rules + config.manifest_max_tokens + framing + 4 * count(SECTION_SEPARATOR)


def reserved_tokens(config: EngineConfig) -> int:
    return FIXED_TOKENS[config.encoding] + config.manifest_max_tokens


def with_reserve(config: EngineConfig) -> EngineConfig:
    """`config` with `reserved_tokens` set for what memvm's renderers send; refused
    (SettingsError) if its budget then leaves no room for a page."""
    return replace(config, reserved_tokens=reserved_tokens(config))
