"""What host hooks leave in the database: the events handled before."""

from dataclasses import dataclass


@dataclass(kw_only=True)
class HandledHookEvent:
    """A host hook event handled before: its name and, for a decision, the answer given."""

    event: str
    answer: str | None
