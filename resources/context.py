"""The packed working set (<VM:CONTEXT>) and the developer message built around it."""

from memvm.engine import Engine
from memvm.engine.models.working_set import WorkingSetView
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
    engine: Engine,
    *,
    namespace: str,
    session: str,
    mode: RuleMode,
    system_prompt: str | None = None,
    project: str | None = None,
) -> DeveloperMessage:
    """System prompt (optional), rules, manifest and context; passive mode sends the context alone."""
    # One snapshot for the manifest and the context, so the two never disagree.
    memory = await engine.memory_map(namespace=namespace, session=session, project=project)
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
