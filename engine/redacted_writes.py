"""What each write path hands to redaction, before anything reaches storage (see redaction).

Free text is redacted where it stands: a page's content, summary and metadata, a message and its
speaker's name, a tool call's arguments, result, error and goal, a bound value, the reasons a
guard gave and a hook's answer. A name the caller chooses to find something by again (a page's
key, a value's alias) is not: replaced, it would name something else, or collide with another
such name. One that looks like a secret is refused instead, saying which kind it looks like.
Session and tool names are identifiers the host chooses, stored as given.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memvm.engine.errors import InvalidArgument
from memvm.engine.redaction import marked_kinds, redact, redact_value, secret_kinds

if TYPE_CHECKING:
    # For their types only: a host's pre-tool hook redacts a call's record without the page,
    # message and outcome models (and pydantic, which they bring).
    from memvm.engine.models.pages import NewPage
    from memvm.engine.models.procedures import ToolOutcome
    from memvm.engine.models.writes import IngestMessage
    from pydantic import BaseModel

Model = TypeVar("Model", bound="BaseModel")


def page(new: NewPage) -> NewPage:
    return new.model_copy(
        update={
            "content": redact(new.content),
            "summary": None if new.summary is None else redact(new.summary),
            "metadata": redact_value(new.metadata),
        }
    )


def kinds_replaced(before: NewPage, after: NewPage) -> list[str]:
    """The kinds of secret redaction replaced between `before` and `after`, each once, in order:
    what the writer is told was not kept."""
    found: list[str] = []
    for was, now in (
        (before.content, after.content),
        (before.summary or "", after.summary or ""),
        (json.dumps(before.metadata, sort_keys=True), json.dumps(after.metadata, sort_keys=True)),
    ):
        if was != now:
            markers = marked_kinds(now)
            for kind in marked_kinds(was):  # markers the writer wrote are not replacements
                markers.remove(kind)
            found.extend(markers)
    return list(dict.fromkeys(found))


def message(said: IngestMessage) -> IngestMessage:
    return said.model_copy(
        update={"content": redact(said.content), "name": None if said.name is None else redact(said.name)}
    )


def outcome(call: ToolOutcome) -> ToolOutcome:
    return call.model_copy(
        update={
            "args": redact_value(call.args),
            "result": redact_value(call.result),
            "error_type": None if call.error_type is None else redact(call.error_type),
            "error_message": None if call.error_message is None else redact(call.error_message),
            "goal": None if call.goal is None else redact(call.goal),
        }
    )


def optional(text: str | None) -> str | None:
    return None if text is None else redact(text)


def refuse_secret_name(name: str | None, what: str) -> None:
    """Refuse a `what` (a key, an alias) that looks like a secret: a name is shown in manifests,
    logs and exports, and cannot be redacted without becoming another name."""
    if name is not None and (kinds := secret_kinds(name)):
        raise InvalidArgument(
            f"The {what} looks like a secret ({', '.join(kinds)}), and {what}s are stored as given; "
            f"choose a {what} that says what it is, and put the secret nowhere in memory."
        )


@dataclass(frozen=True)
class Redaction:
    """Redaction as this engine is set (`redact_secrets`): every write path hands its input here,
    on or off, so that no path decides for itself whether to redact."""

    enabled: bool

    def page(self, new: NewPage, key: str | None) -> tuple[NewPage, list[str]]:
        """The page as stored, and the kinds of secret replaced in it; a key that looks like a
        secret is refused."""
        if not self.enabled:
            return new, []
        refuse_secret_name(key, "key")
        stored = page(new)
        return stored, kinds_replaced(new, stored)

    def messages(self, said: Sequence[IngestMessage]) -> Sequence[IngestMessage]:
        return [message(each) for each in said] if self.enabled else said

    def outcome(self, call: ToolOutcome) -> ToolOutcome:
        return outcome(call) if self.enabled else call

    def text(self, text: str) -> str:
        return redact(text) if self.enabled else text

    def fields(self, model: Model, *names: str) -> Model:
        """`model` with its text fields `names` redacted."""
        if not self.enabled:
            return model
        return model.model_copy(update={name: redact(getattr(model, name)) for name in names})

    def optional(self, text: str | None) -> str | None:
        return optional(text) if self.enabled else text

    def value(self, value: Any) -> Any:
        return redact_value(value) if self.enabled else value

    def name(self, name: str | None, what: str) -> None:
        if self.enabled:
            refuse_secret_name(name, what)
