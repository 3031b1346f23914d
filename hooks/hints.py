"""Procedural hints for the host's context: what failed with which tools, and what fixed it.

Each line states something recorded (a tool, the error it failed with, how often, when, and the
argument change that made it succeed), never an instruction.
"""

import json
import re
from collections.abc import Sequence

from memvm.engine.models.procedures import ErrorHint, ProceduralKnowledge
from memvm.engine.scope import NamespaceScope, SessionScope
from memvm.hooks.context import day, one_line

# Tools looked up per context: as many as procedural knowledge reports at once.
MAX_TOOLS = 5
# Known tool names matched against a prompt; the most recently used first.
_KNOWN_TOOLS = 200

TITLE = "Recorded tool outcomes (tool | what failed, how often, when | what fixed it):"


def _quoted(text: str, limit: int = 100) -> str:
    return json.dumps(text if len(text) <= limit else text[: limit - 1] + "…", ensure_ascii=False)


def _error_line(tool: str, error: ErrorHint) -> str:
    failed = (
        f"- {tool} | failed {error.count}x with {_quoted(error.example or error.error_type)}"
        f" | last call {error.last_call_id}, {day(error.last_at)}"
    )
    if error.typical_fix_text:
        fixed = f"fixed {error.fix_count}x, last by call {error.fix_call_id}: {error.typical_fix_text}"
    else:
        fixed = "no fix recorded"
    return one_line(f"{failed} | {fixed}")


def hint_lines(knowledge: ProceduralKnowledge) -> list[str]:
    """One line per recorded error pattern, fixed ones first; tools that never failed say nothing."""
    errors = [(tool.tool, error) for tool in knowledge.tools for error in tool.common_errors]
    errors.sort(key=lambda pair: pair[1].typical_fix_text is None)
    return [_error_line(tool, error) for tool, error in errors]


def named_in(text: str, tools: Sequence[str]) -> list[str]:
    """The tools whose whole name appears in `text`, in any case."""
    return [
        tool
        for tool in tools
        if re.search(rf"(?<![\w-]){re.escape(tool)}(?![\w-])", text, flags=re.IGNORECASE)
    ]


async def tools_in_play(scope: SessionScope, prompt: str) -> list[str]:
    """The tools a prompt names, then the ones this session used lately."""
    known = await scope.known_tools(limit=_KNOWN_TOOLS)
    if not known:
        return []
    used = await scope.session_tools(limit=MAX_TOOLS)
    return list(dict.fromkeys([*named_in(prompt, known), *used]))[:MAX_TOOLS]


async def hints_for(scope: NamespaceScope, tools: Sequence[str] | None) -> list[str]:
    """Hint lines for `tools`; None means the tools the namespace used most recently."""
    if tools is not None and not tools:
        return []
    knowledge = await scope.procedural_knowledge(tools=tools)
    return hint_lines(knowledge)
