"""Database files as an earlier memvm left them: built by its migrations, filled by plain SQL."""

import json
import sqlite3
from pathlib import Path

from memvm.engine.storage.migrations import MIGRATIONS, ledger_sql


def file_at(path: Path, version: int) -> sqlite3.Connection:
    """A new file at schema `version`, as the migrations up to it leave it; the caller closes it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(ledger_sql("sqlite"))
    for migration in MIGRATIONS["sqlite"][:version]:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)",
            (migration.version, migration.name),
        )
    return conn


def add_session(conn: sqlite3.Connection, namespace: str, session: str) -> None:
    conn.execute(
        "INSERT INTO sessions (namespace, session, turn_started_at, last_call_at, created_at) VALUES (?, ?, 0, 0, 0)",
        (namespace, session),
    )


def add_page(
    conn: sqlite3.Connection,
    namespace: str,
    session: str,
    page_id: str,
    content: str,
    name: str | None = None,
) -> int:
    """A page row of schemas 1 to 6, whose text sits in the row; returns its rowid."""
    words = content.split()
    metadata = json.dumps({"name": name} if name else {})
    cursor = conn.execute(
        """INSERT INTO pages (namespace, page_id, session, type, role, modality, importance, pinned,
               provenance, created_at, last_access, access_count, turn, metadata, content, reduced,
               abstract, reference, tokens_full, tokens_reduced, tokens_abstract, tokens_reference)
           VALUES (?, ?, ?, 'transcript', 'user', 'text', 0.5, 0, 'user', 1, 1, 0, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            namespace,
            page_id,
            session,
            metadata,
            content,
            " ".join(words[: len(words) // 2 + 1]),
            " ".join(words[:6]),
            "[transcript/user] " + " ".join(words[:3]),
            len(words),
            len(words) // 2 + 1,
            min(6, len(words)),
            5,
        ),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid
