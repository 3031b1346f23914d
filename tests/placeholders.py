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
from collections.abc import Sequence
from typing import Any

from memvm.engine.storage.statements import Statement, Untranslatable, compile_sql, read_sql


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> tuple[str, tuple[int, ...]]:
    """`sql` with psycopg's named placeholders, and the indexes of the parameters it takes."""
    out: list[str] = []
    order: list[int] = []
    highest = 0  # SQLite's rule: a bare `?` takes the number after the highest one used so far
    previous = ""
    for kind, piece in read_sql(sql, named=False):
        if previous == "?" and piece[0] in "|&":
            raise Untranslatable("a ?| or ?& operator")
        previous = piece
        if kind == "positional":
            number = int(piece[1:]) if len(piece) > 1 else highest + 1
            highest = max(highest, number)
            order.append(number - 1)
            out.append(f"%(p{number})s")
        elif kind == "percent":
            out.append("%%")
        else:
            out.append(piece)  # quoted strings and comments as they are
    return "".join(out), tuple(sorted(set(order)))


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


def query(sql: str) -> Statement:
    """A test's (or a benchmark's) own query with `:name` parameters, run through an engine
    transaction as the engine's registered statements are (unregistered: it is not the product's)."""
    compiled = compile_sql(sql)
    return Statement("a test's query", compiled.texts, compiled.params)
