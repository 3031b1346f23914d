"""What host hooks leave in the database: the events handled before."""

from pydantic import BaseModel


class HandledHookEvent(BaseModel):
    """A host hook event handled before: its name and, for a decision, the answer given."""

    event: str
    answer: str | None
