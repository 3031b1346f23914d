"""Rows as the engine reads them from PostgreSQL: by position or by column name, as sqlite3.Row."""

from collections.abc import Iterator, Sequence
from typing import Any


class PgRow(Sequence[Any]):
    """A row read by position or by column name, like sqlite3.Row; `dict(row)` gives its columns."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names = names
        self._values = values

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._names, self._values, strict=True))!r})"
