"""One numbered schema change: what each backend's list of migrations is made of."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
