"""What the two backends' SQL says differently, as fragments a statement embeds.

Light on purpose (no driver is imported): statements are compiled for both backends when their
modules are imported (statements.py), whichever backend the process then opens.
"""

from abc import ABC, abstractmethod


class SqlDialect(ABC):
    name: str

    @abstractmethod
    def greatest(self, *values: str) -> str:
        """The largest of the SQL expressions `values` (a scalar, not an aggregate)."""

    @abstractmethod
    def find(self, haystack: str, needle: str) -> str:
        """The 1-based position of `needle` in `haystack` (SQL expressions), or 0."""

    @abstractmethod
    def json_strings(self, param: str) -> str:
        """A FROM item, aliased `s`, whose column `value` holds each string of the JSON array
        `param` (a bound parameter)."""


class SqliteSql(SqlDialect):
    name = "sqlite"

    def greatest(self, *values: str) -> str:
        return f"max({', '.join(values)})"

    def find(self, haystack: str, needle: str) -> str:
        return f"instr({haystack}, {needle})"

    def json_strings(self, param: str) -> str:
        return f"json_each({param}) AS s"


class PostgresSql(SqlDialect):
    name = "postgresql"

    def greatest(self, *values: str) -> str:
        return f"GREATEST({', '.join(values)})"

    def find(self, haystack: str, needle: str) -> str:
        return f"strpos({haystack}, {needle})"

    def json_strings(self, param: str) -> str:
        return f"jsonb_array_elements_text(CAST({param} AS jsonb)) AS s(value)"


SQLITE = SqliteSql()
POSTGRESQL = PostgresSql()
DIALECTS: tuple[SqlDialect, ...] = (SQLITE, POSTGRESQL)
