import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvm.engine.models.pages import PageType
from memvm.engine.paging.context_lines import context_line, line_body, line_head
from memvm.engine.paging.framing import neutralise
from memvm.engine.paging.tokens import TokenCounter

from tests.conftest import examples
from tests.framing import BRACKETS, INJECTION, TAG_LOOKALIKES, hostile_text, tags


@pytest.mark.parametrize("spelling", [*TAG_LOOKALIKES, INJECTION])
def test_every_spelling_of_a_memvm_tag_is_escaped(spelling):
    assert tags(spelling)  # the reader does take it for a tag
    escaped = neutralise(spelling)
    assert tags(escaped) == []
    assert "&lt;" in escaped


@pytest.mark.parametrize(
    "text",
    [
        "if a < b and b > c",
        "<div class='x'>",
        "List<VMware>",
        "<vmware:config>",
        "<<",
        "x<y",
        "plain",
        "<p>procedure</p>",
        "\u2039VMware\u203a and \u3008vm\u3009",
        "a \u27e8b, c\u27e9 \u02c2 d",
        "<\u041c\u043e\u0441\u043a\u0432\u0430> <\u0412\u0430\u043c> <\u0432\u043c\u0435\u0441\u0442\u0435>",
        "<\u039c\u03ac\u03b8\u03b7\u03bc\u03b1> <\u03c1\u03bf\u03ae>",
        "<procedural> <memory> <procedure_memory>",
        "<vm-id> List<VM.Instance> Map<VM,Int> a <- b",
    ],
)
def test_other_angle_brackets_are_left_as_they_are(text):
    assert neutralise(text) == text


# Default_Ignorable_Code_Point, from the Unicode Character Database (DerivedCoreProperties.txt).
DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]


def test_no_invisible_character_hides_a_tag():
    invisible = {chr(c) for first, last in DEFAULT_IGNORABLE for c in range(first, last + 1)}
    invisible |= {
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) in {"Cf", "Mn", "Me", "Zs"}
    }
    invisible |= set("\u2800\t\x1f")
    missed = [
        hex(ord(char))
        for char in sorted(invisible)
        for spelling in (f"<{char}/VM:CONTEXT>", f"<V{char}M:RULES>", f"<vm{char}:rules>")
        if not neutralise(spelling).startswith("&lt;")
    ]
    assert missed == []


def test_every_character_that_folds_to_a_bracket_opens_a_tag():
    brackets = [
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and any(b in unicodedata.normalize("NFKD", chr(c)) for b in BRACKETS)
    ]
    assert len(brackets) > len(BRACKETS)
    assert [b for b in brackets if neutralise(f"{b}/VM:CONTEXT>") != "&lt;/VM:CONTEXT>"] == []


@pytest.mark.parametrize(
    "spelling",
    [
        "<VM" + "\u200b" * 500 + ":CONTEXT>",
        "<V" + "\ufe0f\u0301" * 300 + "M:RULES>",
        "<procedural" + "_" * 200 + "memory>",
        "</procedural" + " -." * 100 + "memory>",
    ],
    ids=["zero-width-run", "marks-inside-name", "underscore-run", "separator-run"],
)
def test_a_tag_is_found_past_any_number_of_unseen_characters_or_separators(spelling):
    assert neutralise(spelling).startswith("&lt;")
    assert tags(neutralise(spelling)) == []


def test_a_capital_i_for_the_l_of_procedural_is_escaped():
    # Read as "PROCEDURAL" in many fonts; memvm's own names keep their I (MANIFEST), so the
    # reader in tests does not fold it and this is checked here alone.
    assert neutralise("</PROCEDURAI_MEMORY>") == "&lt;/PROCEDURAI_MEMORY>"


def test_a_long_text_of_brackets_and_invisible_runs_is_read_once():
    # Each character is read for one bracket at most: reading on to the end for every bracket
    # would fold some 80 million characters here.
    text = ("<" + "\u200b" * 2000) * 200 + "<VM:RULES>"
    assert neutralise(text) == text[:-10] + "&lt;VM:RULES>"


@settings(max_examples=examples(300), deadline=None)
@given(text=hostile_text)
def test_a_context_line_holds_no_tag_and_no_second_line(text):
    line = context_line("note_000001", PageType.NOTE, None, text)
    assert tags(line) == []
    assert line.splitlines() == [line]
    assert line.startswith("N note_000001: ")


@settings(max_examples=examples(200), deadline=None)
@given(text=hostile_text, encoding=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_an_escaped_line_still_costs_its_head_plus_its_body(text, encoding):
    counter = TokenCounter(encoding)
    head, body = line_head("msg_000007", PageType.TRANSCRIPT, None), line_body(text)
    assert counter.count(head + body) == counter.count(head) + counter.count(body)
