"""What an import did, counted, and said in one line; and what it had to leave out, one line each."""

from dataclasses import dataclass, field
from enum import StrEnum

from memvm.engine.operations.importers.notes import NoteOutcome


class Counted(StrEnum):
    """What a format brings in: conversations, a knowledge graph, or notes."""

    CONVERSATIONS = "conversations"
    GRAPH = "graph"
    NOTES = "notes"


@dataclass
class ImportCounts:
    counted: Counted
    conversations: int = 0
    messages: int = 0
    already_there: int = 0
    entities: int = 0
    relations: int = 0
    notes: int = 0
    written: int = 0
    unchanged: int = 0
    empty: int = 0
    expired: int = 0
    # Items that could not be stored (too long, a key that names a transcript page, a link out of
    # the folder): left out, each with the line that says which and why.
    warnings: list[str] = field(default_factory=list)
    # What was stored, but may not be what the person meant (a note pinned by its front matter).
    notices: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.warnings)

    def note(self, outcome: NoteOutcome) -> None:
        if outcome is NoteOutcome.UNCHANGED:
            self.unchanged += 1
        elif outcome is NoteOutcome.EXPIRED:
            self.expired += 1
        else:
            self.written += 1

    def skip(self, warning: str) -> None:
        self.warnings.append(warning)

    def summary(self) -> str:
        """e.g. `3 conversations, 41 messages (12 already there)`."""
        notes = f"{self.written} written, {self.unchanged} unchanged"
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        match self.counted:
            case Counted.CONVERSATIONS:
                return (
                    f"{self.conversations} conversations, {self.messages} messages "
                    f"({self.already_there} already there{skipped})"
                )
            case Counted.GRAPH:
                return f"{self.entities} entities, {self.relations} relations: {notes}{skipped}"
            case Counted.NOTES:
                empty = f", {self.empty} empty skipped" if self.empty else ""
                expired = f", {self.expired} expired skipped" if self.expired else ""
                return f"{self.notes} notes: {notes}{empty}{expired}{skipped}"
