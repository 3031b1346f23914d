"""One numbered schema change: what each backend's list of migrations is made of."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


@dataclass(frozen=True)
class SchemaChange:
    """One version written for both backends at once, so neither can be forgotten: SQLite's
    statements beside PostgreSQL's (either may be empty where that backend needs nothing)."""

    version: int
    name: str
    sqlite: tuple[str, ...]
    postgresql: tuple[str, ...]

    def on(self, backend: str) -> Migration:
        statements = self.sqlite if backend == "sqlite" else self.postgresql
        return Migration(self.version, self.name, statements)
