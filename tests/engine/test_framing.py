import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvm.engine.framing import neutralise
from memvm.engine.models import PageType
from memvm.engine.tokens import TokenCounter
from memvm.engine.working_set import context_line, line_body, line_head

from tests.framing import INJECTION, TAG_LOOKALIKES, hostile_text, tags


@pytest.mark.parametrize("spelling", [*TAG_LOOKALIKES, INJECTION])
def test_every_spelling_of_a_memvm_tag_is_escaped(spelling):
    assert tags(spelling)  # the reader does take it for a tag
    escaped = neutralise(spelling)
    assert tags(escaped) == []
    assert "&lt;" in escaped


@pytest.mark.parametrize(
    "text",
    ["if a < b and b > c", "<div class='x'>", "List<VMware>", "<vmware:config>", "<<", "x<y", "plain"],
)
def test_other_angle_brackets_are_left_as_they_are(text):
    assert neutralise(text) == text


@settings(max_examples=300, deadline=None)
@given(text=hostile_text)
def test_a_context_line_holds_no_tag_and_no_second_line(text):
    line = context_line("note_000001", PageType.NOTE, None, text)
    assert tags(line) == []
    assert line.splitlines() == [line]
    assert line.startswith("N note_000001: ")


@settings(max_examples=200, deadline=None)
@given(text=hostile_text, encoding=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_an_escaped_line_still_costs_its_head_plus_its_body(text, encoding):
    counter = TokenCounter(encoding)
    head, body = line_head("msg_000007", PageType.TRANSCRIPT, None), line_body(text)
    assert counter.count(head + body) == counter.count(head) + counter.count(body)
