"""`memvm import --format ...`: memory from where users keep it today, added through the engine.

One module per format reads its files into notes or conversations; `notes` and `conversations`
write them, so that every import goes through the engine's write path (redaction included) and
is idempotent: importing the same file twice adds nothing the second time.
"""

from enum import StrEnum


class ImportFormat(StrEnum):
    """The formats `memvm import` reads. Here, apart from the readers (formats.py), so that the
    command line can list them without importing the engine."""

    JSONL = "jsonl"  # memvm's own export: see operations/transfer.py
    SERVER_MEMORY = "server-memory"
    CHATGPT = "chatgpt"
    CLAUDE = "claude"
    MARKDOWN = "markdown"
