"""The stretch of time a query names, counted back from now."""

from datetime import datetime, timedelta

import pytest
from memvm.engine.paging.when import time_window

# A Saturday evening, local time.
NOW = datetime(2023, 3, 25, 18, 26)


def covers(query: str, *days_back: float) -> list[bool]:
    """For each number of days before NOW, whether the window `query` names holds that moment."""
    window = time_window(query, NOW.timestamp())
    assert window is not None, query
    start, end = window
    return [start <= (NOW - timedelta(days=back)).timestamp() < end for back in days_back]


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("What kitchen appliance did I buy 10 days ago?", [10, 9.5, 11], [6, 14]),
        ("I cooked something a couple of days ago. What was it?", [2], [5, 0]),
        ("What was the event two weeks ago?", [14, 12, 16], [7, 21]),
        ("What charity event was I at a month ago?", [30, 24], [10, 45]),
        ("Where did I go 3 weeks ago", [21], [10]),
        ("What did we eat yesterday?", [1], [0, 3]),
        ("Who did I meet at lunch last Tuesday?", [4], [0, 7 + 4]),  # Tuesday the 21st
        ("Where was I last weekend?", [7, 6], [0, 14]),
        ("Which shoes did I clean last month?", [20, 45], [70]),
    ],
)
def test_a_named_stretch_holds_its_day_with_a_margin_for_rounding(query, inside, outside):
    assert covers(query, *inside) == [True] * len(inside)
    assert covers(query, *outside) == [False] * len(outside)


@pytest.mark.parametrize(
    "query",
    [
        "How many days ago did I attend a networking event?",  # asks for the span, names none
        "What did Caroline paint?",
        "Which did I buy first, the kettle or the toaster?",
        "What did I do before the trip?",
        "How many days passed between the two concerts?",
    ],
)
def test_a_query_naming_no_stretch_has_no_window(query):
    assert time_window(query, NOW.timestamp()) is None
