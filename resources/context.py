"""The packed working set (<VM:CONTEXT>) and the developer message built around it."""

from memvm.engine.models.working_set import WorkingSetView
from memvm.engine.scope import SessionScope
from memvm.resources.manifest import MANIFEST_CLOSE, MANIFEST_OPEN, build_manifest, cap_manifest
from memvm.resources.rules import RuleMode, rules_text
from pydantic import BaseModel

CONTEXT_OPEN = "<VM:CONTEXT>"
CONTEXT_CLOSE = "</VM:CONTEXT>"
SECTION_SEPARATOR = "\n\n"


class DeveloperMessage(BaseModel):
    mode: RuleMode
    text: str
    tokens: int
    budget_tokens: int


def render_context(view: WorkingSetView) -> str:
    """One line per mapped page, oldest first, each prefixed by role or type and page id."""
    lines = "\n".join(entry.line for entry in view.entries)
    return f"{CONTEXT_OPEN}\n{lines}\n{CONTEXT_CLOSE}"


async def render_developer_message(
    scope: SessionScope, *, mode: RuleMode, system_prompt: str | None = None
) -> DeveloperMessage:
    """System prompt (optional), rules, manifest and context; passive mode sends the context alone."""
    engine = scope.engine
    # One snapshot for the manifest and the context, so the two never disagree.
    memory = await scope.memory_map()
    sections = [system_prompt] if system_prompt else []
    if mode is not RuleMode.PASSIVE:
        manifest = cap_manifest(build_manifest(memory), engine)
        sections += [
            rules_text(mode, max_faults_per_turn=engine.config.max_faults_per_turn),
            f"{MANIFEST_OPEN}\n{manifest}\n{MANIFEST_CLOSE}",
        ]
    sections.append(render_context(memory.view))
    text = SECTION_SEPARATOR.join(sections)
    return DeveloperMessage(
        mode=mode, text=text, tokens=engine.counter.count(text), budget_tokens=engine.config.budget_tokens
    )
