"""What of a page is embedded: its text, after the name of whoever said it.

A conversation between people is asked about by name ("What did Caroline paint?"), and a turn
seldom says its speaker's name: "I painted a sunset" is Caroline's only by the message's name.
Embedded with it ("Caroline: I painted a sunset"), the turn is near such a question by meaning;
on LoCoMo's development half this doubled what meaning alone finds in the first five (.22 to .42;
tests/bench/fusion_tuning.py). A name that only says the role ("user", "assistant") tells nothing
and is left out, so a page without a speaker's name is embedded as it reads.
"""

from memvm.engine.models.pages import Role

# Lower case: a name is compared after casefold().
ROLE_NAMES = frozenset(role.value for role in Role)


def speaker_name(speaker: object) -> str | None:
    """The name a page is embedded after: its speaker's, unless that only says the role."""
    if not isinstance(speaker, str):
        return None
    name = speaker.strip()
    return name if name and name.casefold() not in ROLE_NAMES else None


def embedded_text(content: str, speaker: object) -> str:
    """The text a page's vector is made of."""
    name = speaker_name(speaker)
    return f"{name}: {content}" if name else content
