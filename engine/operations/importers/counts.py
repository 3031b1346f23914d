"""What an import did, counted, and said in one line."""

from dataclasses import dataclass
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

    def note(self, outcome: NoteOutcome) -> None:
        if outcome is NoteOutcome.UNCHANGED:
            self.unchanged += 1
        else:
            self.written += 1

    def summary(self) -> str:
        """e.g. `3 conversations, 41 messages (12 already there)`."""
        notes = f"{self.written} written, {self.unchanged} unchanged"
        match self.counted:
            case Counted.CONVERSATIONS:
                return (
                    f"{self.conversations} conversations, {self.messages} messages "
                    f"({self.already_there} already there)"
                )
            case Counted.GRAPH:
                return f"{self.entities} entities, {self.relations} relations: {notes}"
            case Counted.NOTES:
                empty = f", {self.empty} empty skipped" if self.empty else ""
                return f"{self.notes} notes: {notes}{empty}"
