"""Fresh PostgreSQL databases for the benchmarks: one per run, size or conversation, on the server
`--db-url` names (any database on it; memvm's go beside it), or on a throwaway server started on
loopback when none is named. All are dropped at the end.
"""

import os
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from tests import postgres_server


class Databases:
    """Fresh PostgreSQL databases on one server, dropped at the end."""

    def __init__(self, url: str | None) -> None:
        self._server = None if url else postgres_server.start()
        self._url = url or self._server.url  # type: ignore[union-attr]
        self._made: list[str] = []

    @property
    def server_url(self) -> str:
        """The database on the server the others were made beside (for what asks the server itself)."""
        return self._url

    def fresh(self) -> str:
        name = f"memvm_bench_{os.getpid()}_{len(self._made)}"
        with psycopg.connect(self._url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
        self._made.append(name)
        return self._url.rsplit("/", 1)[0] + "/" + name

    def size(self, url: str) -> int:
        """The database's size on disk, in bytes."""
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        with psycopg.connect(self._url, autocommit=True) as conn:
            for name in self._made:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
        if self._server is not None:
            self._server.stop()
