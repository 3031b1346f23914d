import pytest
from hypothesis import given
from hypothesis import strategies as st
from memvm.engine.procedures.signatures import argument_delta, describe_delta, error_signature


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("User 4411 not found", "User 9 not found"),
        ("No such file: /tmp/a1/b.txt", "No such file: /var/log/x.log"),
        ("Unknown id 'abc-123'", 'Unknown id "zz_9"'),
        ("Order ord_000123 is locked", "Order ord_987 is locked"),
        ("Segfault at 0xDEADBEEF", "Segfault at 0x1F"),
        (
            "Request 550e8400-e29b-41d4-a716-446655440000 failed",
            "Request 6ba7b810-9dad-11d1-80b4-00c04fd430c8 failed",
        ),
        ("GET https://api.example.com/v1/items?page=2 timed out", "GET http://localhost:8080/x timed out"),
        ("Rate limited, retry in 12.5 s", "Rate limited, retry in 3 s"),
    ],
)
def test_errors_differing_only_in_ids_paths_numbers_or_quoted_values_share_a_signature(first, second):
    assert error_signature(None, first, "failure") == error_signature(None, second, "failure")


def test_different_errors_keep_different_signatures():
    assert error_signature(None, "User 1 not found", "failure") != error_signature(
        None, "User 1 is locked", "failure"
    )


def test_an_explicit_error_type_wins_over_the_message():
    assert error_signature("RateLimited", "retry in 5 s", "failure") == "RateLimited"


def test_without_a_message_the_outcome_is_the_signature():
    assert error_signature(None, None, "timeout") == "timeout"
    assert error_signature(None, "   ", "failure") == "failure"


def test_the_delta_names_added_removed_and_changed_keys_at_any_depth():
    before = {"date": "12/05", "options": {"timeout": 5, "retries": 2}, "legacy": True}
    after = {"date": "2026-05-12", "options": {"timeout": 30, "retries": 2}, "strict": True}
    assert argument_delta(before, after) == {
        "added": {"strict": True},
        "removed": {"legacy": True},
        "changed": {"date": {"from": "12/05", "to": "2026-05-12"}, "options.timeout": {"from": 5, "to": 30}},
    }


def test_a_delta_in_words_is_bounded():
    delta = argument_delta({f"k{i}": i for i in range(10)}, {f"k{i}": i + 1 for i in range(10)})
    text = describe_delta(delta)
    assert text.startswith("changed k0 from 0 to 1") and text.endswith("and 7 more")


json_objects = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        st.none() | st.integers() | st.text(max_size=5),
        lambda c: st.dictionaries(st.text(max_size=3), c, max_size=3),
    ),
    max_size=5,
)


@given(json_objects)
def test_the_delta_of_a_call_with_itself_is_empty(args):
    assert argument_delta(args, args) == {"added": {}, "removed": {}, "changed": {}}


@given(json_objects, json_objects)
def test_a_delta_and_its_reverse_mirror_each_other(before, after):
    forward, backward = argument_delta(before, after), argument_delta(after, before)
    assert forward["added"].keys() == backward["removed"].keys()
    assert forward["changed"].keys() == backward["changed"].keys()


def test_a_failed_commands_exit_status_line_gives_way_to_the_line_that_says_what_went_wrong():
    missing = error_signature(None, "Exit code 1\nnpm ERR! Missing script: tset\n", "failure")
    failing = error_signature(None, "Exit code 1\nFAIL tests/api.test.ts", "failure")
    assert missing.startswith("npm err! missing script") and missing != failing
    # A message that says nothing more keeps its one line.
    assert error_signature(None, "Exit code 2", "failure") == "exit code <n>"
