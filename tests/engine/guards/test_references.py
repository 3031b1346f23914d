import json
import re

from hypothesis import example, given
from hypothesis import strategies as st
from memvm.engine.guards.references import referenced_names, resolve


def test_a_whole_string_reference_becomes_the_bound_value_with_its_type():
    known = {"v1": 42, "v2": [1, 2], "total": {"eur": 5}}
    resolution = resolve({"a": "$v1", "b": ["$v2"], "c": {"d": "$total"}}, known)
    assert resolution.resolved == {"a": 42, "b": [[1, 2]], "c": {"d": {"eur": 5}}}
    assert resolution.missing == []


def test_a_reference_inside_longer_text_is_interpolated():
    resolution = resolve({"q": "sum $v1 of $v2 by $name"}, {"v1": 3.5, "v2": [1], "name": "ann"})
    assert resolution.resolved == {"q": "sum 3.5 of [1] by ann"}


def test_unknown_references_are_reported_missing_and_never_passed_through():
    resolution = resolve({"a": "$v9", "b": "total $v7 here", "c": "$nobody"}, {})
    assert resolution.missing == ["$nobody", "$v7", "$v9"]


def test_dollar_words_in_prose_that_name_no_binding_are_left_alone():
    resolution = resolve({"cmd": "echo $HOME costs $5"}, {})
    assert resolution.resolved == {"cmd": "echo $HOME costs $5"}
    assert resolution.missing == []


INVOICE = {"total": 1249.5, "lines": [{"sku": "A1", "qty": 3}, {"sku": "B7", "qty": 1}], "paid": False}


def test_a_reference_goes_on_into_fields_and_list_items_keeping_their_types():
    args = {"amount": "$invoice.total", "qty": "$invoice.lines[0].qty", "last": "$invoice.lines[1]"}
    resolution = resolve(args, {"invoice": INVOICE})
    assert resolution.resolved == {"amount": 1249.5, "qty": 3, "last": {"sku": "B7", "qty": 1}}
    assert (resolution.missing, resolution.unreadable) == ([], {})


def test_a_path_the_bound_value_lacks_is_refused_saying_what_it_has():
    args = {"a": "$invoice.totl", "b": "$invoice.lines[5].qty", "c": "$invoice.total.eur", "d": "$nobody.x"}
    resolution = resolve(args, {"invoice": INVOICE})
    assert resolution.missing == ["$invoice.lines[5].qty", "$invoice.total.eur", "$invoice.totl", "$nobody.x"]
    assert resolution.unreadable == {
        "$invoice.totl": "$invoice has no field 'totl' (its fields: lines, paid, total)",
        "$invoice.lines[5].qty": "$invoice.lines holds 2 items, so [5] is past its end",
        "$invoice.total.eur": "$invoice.total is a number, with no field 'eur'",
    }
    assert resolution.resolved == args  # nothing is passed on in their place


def test_referenced_names_are_collected_from_every_depth():
    assert referenced_names({"a": ["$v1", {"b": "x $total y"}], "c": 3}) == {"v1", "total"}


@given(
    st.recursive(
        st.integers() | st.text(alphabet="ab $v120_", max_size=10), lambda c: st.lists(c, max_size=3)
    )
)
@example("$v1a")  # an alias named v1a, not $v1 followed by "a"
@example("$v$v1")  # filling in $v1 makes the text "$v7", which is not re-read as a reference
@example(["x $v12 y", "$v1"])
def test_exactly_the_unbound_sequential_references_are_reported_missing(value):
    resolution = resolve(value, {"v1": 7})
    written = set(re.findall(r"\$(v[1-9][0-9]*)(?![A-Za-z0-9_])", json.dumps(value)))
    sequential_missing = {name for name in resolution.missing if re.fullmatch(r"\$v[1-9][0-9]*", name)}
    assert sequential_missing == {f"${name}" for name in written - {"v1"}}
