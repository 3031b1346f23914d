"""Every failure the engine reports, as one tree of nouns.

Each message is written for the model that called the tool: one sentence that says what
happened and what to do next. No paths, SQL or tracebacks ever go into a message.
"""


class MemvmError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidArgument(MemvmError):
    """An argument passed validation of its type but not of its meaning."""


class PageTooLong(InvalidArgument):
    """Content over the page limit: in characters, told before any of it is counted, or in tokens."""

    def __init__(self, size: int, limit: int, unit: str) -> None:
        super().__init__(
            f"The content is {size} {unit}s, over the {limit}-{unit} page limit; split it into smaller pages."
        )
        self.size, self.limit, self.unit = size, limit, unit


class PageNotFound(MemvmError):
    def __init__(self, page_id: str) -> None:
        super().__init__(
            f"No page '{page_id}' exists in this memory; call search_pages to find the right page id."
        )
        self.page_id = page_id


def fault_limit_resets(idle_seconds: float, *, turns_from_host: bool) -> str:
    """When a used-up fault allowance comes back, in words true for the host: a host that never
    starts turns lets only the idle gap start one, so its model is never promised a user message."""
    idle = f"after {idle_seconds:g} s without memory calls"
    return f"at the next turn (the next user message) or {idle}" if turns_from_host else idle


class FaultLimitReached(MemvmError):
    def __init__(self, limit: int, turn: int, idle_seconds: float, *, turns_from_host: bool = True) -> None:
        # The turn number means nothing to a model whose host never starts turns.
        which = f" for turn {turn}" if turns_from_host else ""
        super().__init__(
            f"The limit of {limit} page faults{which} is used up; answer with what you have. "
            f"It resets {fault_limit_resets(idle_seconds, turns_from_host=turns_from_host)}."
        )


class KeyConflict(MemvmError):
    def __init__(self, key: str, page_type: str) -> None:
        super().__init__(
            f"The key '{key}' already names a {page_type} page, which remember cannot overwrite; "
            "choose another key."
        )


class KeyInOtherProject(MemvmError):
    def __init__(self, key: str) -> None:
        super().__init__(
            f"The key '{key}' already names a page of another project; choose a key that names this "
            "project's subject."
        )


class PageChanged(MemvmError):
    def __init__(self, page_id: str) -> None:
        super().__init__(
            f"The page '{page_id}' changed since it was read; read it again and redo the change on the new text."
        )
        self.page_id = page_id


class StorageError(MemvmError):
    """The database could not complete a request; nothing was half-written."""


class StorageBusy(StorageError):
    def __init__(self) -> None:
        super().__init__("Storage is busy with another writer; retry the same call in a moment.")


class StorageFull(StorageError):
    def __init__(self) -> None:
        super().__init__(
            "Storage is full, so nothing was saved; forget pages you no longer need, or ask the user to "
            "free disk space, then retry."
        )


class NamespaceFull(StorageFull):
    """This namespace's share (`--max-namespace-mb`) is used up; other namespaces still write."""

    def __init__(self, quota_mb: int, *, mostly_logs: bool = False) -> None:
        # Pages can be forgotten (their earlier versions with them); bound values and recorded
        # calls only age out, so when those hold most of the share the operator may have to help.
        remedy = (
            "most of it is bound values, recorded tool calls and earlier versions of notes: forget "
            "notes you no longer need, or ask the operator for a larger share"
            if mostly_logs
            else "forget pages you no longer need, then retry"
        )
        StorageError.__init__(
            self, f"This memory is at its size limit ({quota_mb} MB of text), so nothing was saved; {remedy}."
        )


class StorageReadOnly(StorageError):
    def __init__(self) -> None:
        super().__init__("This memory is read-only, so nothing was saved; answer without storing.")


class StorageUnavailable(StorageError):
    def __init__(self) -> None:
        super().__init__(
            "The memory's database server cannot be reached right now, so nothing was read or saved; "
            "retry the same call in a moment."
        )


class DatabaseRefused(MemvmError):
    """The file at start is corrupt, foreign or from a newer memvm: memvm will not touch it."""


class BackupError(MemvmError):
    """A backup that cannot be made; one line for the person running `memvm backup`."""
