"""The shapes of names, checked whole: by Python's checks and by the tools' schemas alike."""

from typing import Annotated

import pytest
from memvm.engine.names import ID_PATTERN, NAME_PATTERN, TOOL_NAME_PATTERN, is_name, is_page_id, is_tool_name
from pydantic import Field, TypeAdapter, ValidationError

CHECKS = [(is_name, NAME_PATTERN), (is_page_id, ID_PATTERN), (is_tool_name, TOOL_NAME_PATTERN)]


@pytest.mark.parametrize(("check", "pattern"), CHECKS)
@pytest.mark.parametrize("text", ["trail\n", "trail\r\n", "\ntrail", "tr ail", "", "../x", "trail\x00"])
def test_a_name_with_anything_outside_its_shape_is_no_name_for_python_or_the_schemas(check, pattern, text):
    # `re.match` with `$` lets "trail\n" through; the schemas' regex engine ends `$` at the text's end.
    assert not check(text)
    with pytest.raises(ValidationError):
        TypeAdapter(Annotated[str, Field(pattern=pattern)]).validate_python(text)


@pytest.mark.parametrize(("check", "pattern"), CHECKS)
def test_a_plain_name_is_one_for_python_and_the_schemas(check, pattern):
    assert check("trail-1.b:c")
    assert TypeAdapter(Annotated[str, Field(pattern=pattern)]).validate_python("trail-1.b:c") == "trail-1.b:c"


def test_a_name_is_at_most_64_characters_and_a_page_id_128():
    assert is_name("a" * 64) and not is_name("a" * 65)
    assert is_page_id("a" * 128) and not is_page_id("a" * 129)
