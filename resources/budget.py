"""What the budget reserves besides pages: the largest rules block, the manifest cap and framing.

The engine counts page lines exactly; this adds the rest of what a developer message carries, so
that the whole message (without the host's own system prompt) stays within `budget_tokens`.
"""

from collections.abc import Callable

from memvm.engine.config import EngineConfig
from memvm.engine.paging.tokens import TokenCounter
from memvm.resources.context import CONTEXT_CLOSE, CONTEXT_OPEN, SECTION_SEPARATOR
from memvm.resources.manifest import MANIFEST_CLOSE, MANIFEST_OPEN
from memvm.resources.rules import RuleMode, rules_text


def _reserve(config: EngineConfig, count: Callable[[str], int]) -> int:
    rules = max(count(rules_text(mode, max_faults_per_turn=config.max_faults_per_turn)) for mode in RuleMode)
    framing = count(
        SECTION_SEPARATOR.join(
            [f"{MANIFEST_OPEN}\n\n{MANIFEST_CLOSE}", f"{CONTEXT_OPEN}\n\n{CONTEXT_CLOSE}", ""]
        )
    )
    # One token per joint can merge differently at section edges: count each generously.
    return rules + config.manifest_max_tokens + framing + 4 * count(SECTION_SEPARATOR)


def reserved_tokens(config: EngineConfig, counter: TokenCounter) -> int:
    return _reserve(config, counter.count)


def surely_enough(config: EngineConfig) -> bool:
    """Whether the budget leaves room for a page whatever the reserve counts to, known without
    the encoding: a token is at least one byte, so the same texts' bytes bound their tokens."""
    bound = _reserve(config, lambda text: len(text.encode()))
    return config.budget_tokens >= bound + config.smallest_page_budget


def with_reserve(config: EngineConfig) -> EngineConfig:
    """`config` with `reserved_tokens` set for what memvm's renderers actually send."""
    counter = TokenCounter(config.encoding)
    # Validated again (model_copy would not): a budget the reserve leaves no room in is refused.
    return EngineConfig(**{**dict(config), "reserved_tokens": reserved_tokens(config, counter)})
