"""The reserve is known from the settings, without the encoding: the fixed figures must be what the
renderers' texts really count to, at every setting."""

import pytest
from memvm.engine.config import EngineConfig
from memvm.engine.paging.tokens import SUPPORTED_ENCODINGS, TokenCounter
from memvm.engine.settings_limits import UnusableSettings
from memvm.resources.budget import FIXED_TOKENS, counted_reserve, reserved_tokens, with_reserve


@pytest.mark.parametrize("encoding", SUPPORTED_ENCODINGS)
def test_the_fixed_reserve_is_what_the_texts_count_to_at_every_setting(encoding):
    counter = TokenCounter(encoding)
    stale = {
        faults: counted_reserve(config, counter.count) - config.manifest_max_tokens
        for faults in range(1, 101)
        if counted_reserve(
            config := EngineConfig(encoding=encoding, max_faults_per_turn=faults), counter.count
        )
        != reserved_tokens(config)
    }
    assert stale == {}, f"the rules or framing changed: set FIXED_TOKENS[{encoding!r}] in resources/budget.py"


def test_every_encoding_has_a_fixed_reserve():
    assert sorted(FIXED_TOKENS) == sorted(SUPPORTED_ENCODINGS)


def test_a_budget_the_reserve_leaves_no_room_in_is_refused_by_name():
    assert with_reserve(EngineConfig()).reserved_tokens == FIXED_TOKENS["o200k_base"] + 1_500
    with pytest.raises(UnusableSettings, match=r"leaves .* for pages"):
        with_reserve(EngineConfig(budget_tokens=1_700))
