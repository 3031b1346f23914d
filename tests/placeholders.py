"""SQL text with SQLite's `?` placeholders as psycopg takes it: what the tests' own queries of a
database past the engine (conftest.db_rows) are written in, on either backend. The engine's
statements are named and compiled when registered (engine/storage/statements.py).

psycopg takes `%s` and `%(name)s`, so each query is rewritten once (and cached): `?N` becomes `%(pN)s`, which psycopg sends as one server parameter
however often it appears (so its type is inferred from all of its uses), a bare `?` becomes the
next number as SQLite counts, and a literal `%` is doubled. Quoted strings, quoted names and
line comments are left as they are. What this reading cannot tell apart from a placeholder or a
quote is refused rather than guessed at: a block comment, a dollar-quoted string, an E'' string
and PostgreSQL's `?|` and `?&` operators.
"""

import functools
import re
from collections.abc import Sequence
from typing import Any

_DOLLAR_QUOTE = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


class Untranslatable(ValueError):
    """A statement holding what the placeholder translation cannot read safely."""


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> tuple[str, tuple[int, ...]]:
    """`sql` with psycopg's named placeholders, and the indexes of the parameters it takes."""
    out: list[str] = []
    order: list[int] = []
    highest = 0  # SQLite's rule: a bare `?` takes the number after the highest one used so far
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        _refuse_unreadable(sql, i)
        if char in "'\"":
            end = _quoted_end(sql, i, char)
            out.append(sql[i:end])
            i = end
        elif char == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end])
            i = end
        elif char == "?":
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            number = int(sql[i + 1 : j]) if j > i + 1 else highest + 1
            highest = max(highest, number)
            order.append(number - 1)
            out.append(f"%(p{number})s")
            i = j
        elif char == "%":
            out.append("%%")
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out), tuple(sorted(set(order)))


def _refuse_unreadable(sql: str, i: int) -> None:
    char = sql[i]
    if char == "/" and sql.startswith("/*", i):
        raise Untranslatable("a block comment (write -- comments)")
    if char == "$" and _DOLLAR_QUOTE.match(sql, i):
        raise Untranslatable("a dollar-quoted string")
    if (
        char in "eE"
        and sql.startswith("'", i + 1)
        and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_"))
    ):
        raise Untranslatable("an E'' string")
    if char == "?" and sql[i + 1 : i + 2] in ("|", "&"):
        raise Untranslatable("a ?| or ?& operator")


def _quoted_end(sql: str, start: int, quote: str) -> int:
    """The index just past the quoted string or name opening at `start` (a doubled quote stays inside)."""
    i = start + 1
    while True:
        end = sql.find(quote, i)
        if end < 0:
            return len(sql)
        if sql.startswith(quote * 2, end):
            i = end + 2
            continue
        return end + 1


def bind(sql: str, params: Sequence[Any]) -> tuple[str, dict[str, Any] | None]:
    """`sql` and `params` as psycopg takes them (see `translate`). A statement without placeholders
    goes as written, with no parameters: psycopg then reads no `%` in it, and it may hold several
    statements (a migration's)."""
    if "?" not in sql:  # no parameters (a migration's function bodies may hold anything)
        return sql, None
    text, order = translate(sql)
    if not order:
        return sql, None
    return text, {f"p{index + 1}": params[index] for index in order}
