"""Tool arguments no reader can check, for events and transcript lines: a lone surrogate in a
string, and objects nested 985 deep (about 990 with the event or the line around them). Written as
JSON text by hand, since json.dumps itself stops sooner, and put in place of PLACEHOLDER."""

import json
from typing import Any

ARGUMENTS = ['{"memo": "x\\ud800"}', '{"x": ' * 985 + '{"table": "users"}' + "}" * 985]
PLACEHOLDER = {"memvm-test": "arguments"}


def with_arguments(record: dict[str, Any], arguments: str) -> bytes:
    """`record` as JSON, with `arguments` (JSON text) in place of its PLACEHOLDER."""
    text = json.dumps(record)
    assert json.dumps(PLACEHOLDER) in text
    return text.replace(json.dumps(PLACEHOLDER), arguments, 1).encode()
