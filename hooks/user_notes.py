"""What the user asks to have remembered about themselves, kept for every project.

Memory is kept per project under hooks (see engine/paging/projects.py), but what a person says of
themselves ("remember that I'm vegetarian", "remember my daughter is called Ines") is true in
every project. A prompt that opens by asking to remember a first-person fact keeps that fact as
the user's own note, recalled everywhere; anything else is remembered, as always, where it was said.
"""

import re

from memvm.engine.models.pages import NewPage, PageType
from memvm.engine.scope import SessionScope

# "remember (that) I…", "please remember my…", "keep in mind I'm…", "note that I…": the request
# must open the prompt and the fact must be about the speaker, so "remember that the API is v2"
# stays the project's.
_ABOUT_ME = re.compile(
    r"^\W*(?:please\s+)?(?:remember|keep\s+in\s+mind|note|don'?t\s+forget)\s*(?:that|:|,)?\s+"
    r"(?P<fact>(?:i|i'm|i am|i've|i'd|my|me|mine)\b.*)",
    re.IGNORECASE | re.DOTALL,
)
# The fact is the request's first line, as the user wrote it, within this many characters.
_MAX_FACT_CHARS = 500

CONFIRMATION = "memvm memory: what the user asked to remember about themselves is kept, for every project."


def fact_about_user(prompt: str) -> str | None:
    """The first-person fact a prompt asks to have remembered, or None when it asks nothing such."""
    found = _ABOUT_ME.match(prompt.replace("\u2019", "'"))
    if found is None:
        return None
    fact = found["fact"].strip().splitlines()[0].strip()
    return fact[:_MAX_FACT_CHARS] or None


async def keep_for_user(scope: SessionScope, fact: str) -> str:
    """Keep `fact` as the user's note for every project (the same fact twice is one page); its
    page id."""
    kept = await scope.remember(
        page=NewPage(content=fact, type=PageType.PREFERENCE, provenance="user", importance=0.7),
        everywhere=True,
    )
    return kept.page_id
