import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memvm.engine.errors import InvalidArgument
from memvm.engine.guards.literals import (
    MAX_DEPTH,
    call_hash,
    find_literals,
    numbers_in_text,
    parse_numeric_string,
)

json_scalars = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=25,
)


def test_numbers_are_found_at_every_depth_with_their_paths():
    args = {"amount": 42, "order": {"items": [{"price": 9.5, "name": "tea"}, {"qty": "3,000"}]}}
    found = {item.path: item.number for item in find_literals(args)}
    assert found == {"amount": 42.0, "order.items[0].price": 9.5, "order.items[1].qty": 3000.0}


def test_booleans_and_null_are_not_numbers():
    found = find_literals({"flag": True, "off": False, "none": None, "list": [True, 0]})
    assert [(item.path, item.number) for item in found] == [("list[1]", 0.0)]


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("42", 42.0),
        ("-3.5", -3.5),
        ("1,200", 1200.0),
        ("$19.99", 19.99),
        ("-$5", -5.0),
        ("15%", 15.0),
        ("2e3", 2000.0),
        (" 7 ", 7.0),
        ("0\x1f", 0.0),
        ("\u22124", -4.0),
    ],
)
def test_numeric_strings_are_read_as_numbers(text, number):
    assert parse_numeric_string(text) == number


@pytest.mark.parametrize("text", ["abc", "12a", "1.2.3", "1,20", "nan", "inf", "1e400", "", "v2", "$v1"])
def test_strings_that_are_not_one_number_are_not_literals(text):
    assert parse_numeric_string(text) is None


def test_keys_that_are_not_identifiers_are_quoted_in_paths():
    (literal,) = find_literals({"unit price": [5.5]})
    assert literal.path == '["unit price"][0]'


def test_numbers_in_prose_include_grouped_and_dated_numbers_but_not_identifiers():
    numbers = numbers_in_text("On 2026-11-21 I paid $1,200.50 for 3 items (order abc123, version v2).")
    assert {2026.0, 11.0, 21.0, 1200.5, 3.0} <= numbers
    assert 123.0 not in numbers and 2.0 not in numbers


def test_arguments_nested_too_deep_are_refused_with_advice():
    deep: object = 1
    for _ in range(MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(InvalidArgument, match="flatten"):
        find_literals(deep)


def test_the_call_hash_ignores_key_order():
    assert call_hash("t", {"a": 1, "b": [1, 2]}) == call_hash("t", {"b": [1, 2], "a": 1})
    assert call_hash("t", {"a": 1}) != call_hash("u", {"a": 1})


@given(json_values)
def test_every_finite_non_boolean_number_is_found_exactly_once(value):
    expected = []

    def collect(node):
        if isinstance(node, dict):
            for child in node.values():
                collect(child)
        elif isinstance(node, list):
            for child in node:
                collect(child)
        elif isinstance(node, int) and not isinstance(node, bool):
            expected.append(float(node))
        elif isinstance(node, str) and parse_numeric_string(node) is not None:
            expected.append(parse_numeric_string(node))

    collect(value)
    assert [item.number for item in find_literals(value)] == expected


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_a_float_written_as_a_string_reads_back_as_the_same_number(number):
    parsed = parse_numeric_string(repr(number))
    assert parsed is not None and (parsed == number or math.isclose(parsed, number))
