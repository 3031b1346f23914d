"""The engine's SQL: named statements with named parameters, compiled for both backends when the
module that holds them is imported.

A statement is written once, with `:name` parameters (a name may appear more than once, and is
bound once). SQLite binds `:name` itself; for psycopg each becomes `%(name)s`, which it sends as one
server parameter however often it appears, and a literal `%` is doubled. Quoted strings, quoted
names and `--` comments are copied as they are, and PostgreSQL's `::` cast is not a parameter.
What this reading cannot tell apart from a parameter or a quote is refused at import, never
guessed at: a block comment, a dollar-quoted string, an E'' string, and a `?` outside quotes (a
positional parameter, or one of PostgreSQL's jsonb `?` operators).

Where the two backends' SQL differs, a statement is written as a function of the dialect
(dialects.py) and compiled for each. A Template has slots (`{visible}`, `{marks}`) that the engine
fills with SQL of its own (never input) when it runs it; each filling is compiled once. Every
statement and template is registered, so that one test prepares them all on both backends
(tests/engine/storage/test_every_statement.py).
"""

import functools
import re
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memvm.engine.storage.dialects import DIALECTS, SqlDialect

Text = str | Callable[[SqlDialect], str]
_Made = TypeVar("_Made", "Statement", "Template")

_DOLLAR_QUOTE = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")
# One reading of SQL, token by token: each alternative is tried in order at each place. Plain
# text runs up to the first character that could begin anything else; a character that could,
# and is not what it might begin, is read alone ("other") and checked for what is refused.
_TOKEN = re.compile(
    r"""(?P<quoted>'(?:[^']|'')*'|"(?:[^"]|"")*")"""
    r"|(?P<comment>--[^\n]*)"
    r"|(?P<cast>::)"
    r"|(?P<name>:[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<positional>\?\d*)"
    r"|(?P<percent>%)"
    r"|(?P<plain>(?:[^'\"\-:%/$?]|-(?!-)|/(?!\*))+)"
    r"|(?P<other>.)",
    re.DOTALL,
)


class Untranslatable(ValueError):
    """A statement holding what the compilation cannot read safely."""


@dataclass(frozen=True)
class Compiled:
    """A statement's text for each backend's driver, and the parameters it takes."""

    texts: Mapping[str, str]
    params: frozenset[str]


@dataclass(frozen=True, eq=False)
class Statement:
    """One statement: `texts[backend]` is what that backend's driver is given, with `params`."""

    name: str
    texts: Mapping[str, str]
    params: frozenset[str]
    # The one backend the statement is for (it reads that backend's own tables); None: both.
    backend: str | None = None

    def check(self, given: Mapping[str, Any]) -> None:
        """Refuse parameters that are not the statement's own: a mistake in the engine, caught
        before any backend reads a wrong value."""
        if given.keys() != self.params:
            missing, extra = sorted(self.params - given.keys()), sorted(given.keys() - self.params)
            raise TypeError(f"statement {self.name}: missing parameters {missing}, unknown {extra}")


@dataclass(frozen=True, eq=False)
class Template:
    """A statement with slots for SQL the engine writes; `examples` fill each slot as the code
    does, for the test that prepares every statement."""

    name: str
    text: Text
    examples: Mapping[str, str] = field(default_factory=dict)
    backend: str | None = None

    def fill(self, **parts: str) -> Statement:
        return _filled(self, tuple(sorted(parts.items())))

    def slots(self) -> set[str]:
        return {slot for dialect in DIALECTS for slot in _slots(_text_for(self.text, dialect))}


# Every registered statement and template, by name.
REGISTRY: dict[str, Statement | Template] = {}


def statement(name: str, text: Text, *, backend: str | None = None) -> Statement:
    """Register `text` as the statement `name`, compiled for both backends (Untranslatable if it
    cannot be); `backend` names the one it is for, when it reads that backend's own tables."""
    compiled = compile_sql(text)
    return _register(Statement(name, compiled.texts, compiled.params, backend))


def template(name: str, text: Text, *, backend: str | None = None, **examples: str) -> Template:
    """Register `text`, whose `{slots}` the engine fills when it runs it, as the template `name`."""
    made = Template(name, text, examples, backend)
    missing = made.slots() - examples.keys()
    if missing:
        raise Untranslatable(f"template {name}: give an example for each slot ({sorted(missing)})")
    made.fill(**examples)  # compiled once now, so that a template that cannot be fails at import
    return _register(made)


def in_list(values: Sequence[Any], prefix: str = "in") -> tuple[str, dict[str, Any]]:
    """A `{marks}` part for an IN list of `values`, and its parameters."""
    names = [f"{prefix}{index}" for index in range(len(values))]
    return ", ".join(f":{name}" for name in names), dict(zip(names, values, strict=True))


def compile_sql(text: Text) -> Compiled:
    if isinstance(text, str):  # one text for both: one reading gives both backends' forms
        sqlite_text, postgres_text, names = _compile(text)
        return Compiled({"sqlite": sqlite_text, "postgresql": postgres_text}, frozenset(names))
    texts: dict[str, str] = {}
    params: set[str] = set()
    for dialect in DIALECTS:
        sqlite_text, postgres_text, names = _compile(text(dialect))
        texts[dialect.name] = sqlite_text if dialect.name == "sqlite" else postgres_text
        params |= names
    return Compiled(texts, frozenset(params))


def _register(made: _Made) -> _Made:
    if made.name in REGISTRY:
        raise ValueError(f"two statements are named {made.name}")
    REGISTRY[made.name] = made
    return made


@functools.lru_cache(maxsize=2048)
def _filled(made: Template, parts: tuple[tuple[str, str], ...]) -> Statement:
    values = dict(parts)
    text = made.text
    filled: Text = (
        text.format(**values) if isinstance(text, str) else lambda dialect: text(dialect).format(**values)
    )
    compiled = compile_sql(filled)
    return Statement(made.name, compiled.texts, compiled.params, made.backend)


def _text_for(text: Text, dialect: SqlDialect) -> str:
    return text if isinstance(text, str) else text(dialect)


def _slots(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def read_sql(sql: str, *, named: bool = True) -> Iterator[tuple[str, str]]:
    """`sql` as (kind, text) tokens: quoted, comment, cast, name (`:name`), positional (`?`, `?3`),
    percent, plain or other. What no reading can tell apart from a parameter or a quote is refused
    (Untranslatable): a block comment, a dollar-quoted string, an E'' string, an unterminated quote.
    The engine's statements are read by it, and so are the tests' own `?` queries
    (tests/placeholders.py), which have no named parameters (`named=False`: `:e` is plain text)."""
    previous: str | None = None
    for token in _TOKEN.finditer(sql):
        kind, piece = str(token.lastgroup), token.group()
        if kind == "name" and not named:
            kind = "plain"
        # Only plain text can end in the E of an E'' string (a parameter's name cannot).
        if piece[0] == "'" and previous == "plain":
            _refuse(unreadable_at(sql, token.start() - 1))
        if kind == "other":
            if piece in "'\"":
                raise Untranslatable("an unterminated quote")
            _refuse(unreadable_at(sql, token.start()))
        previous = kind
        yield kind, piece


def _compile(sql: str) -> tuple[str, str, set[str]]:
    """`sql` as SQLite takes it, as psycopg takes it, and the names of its parameters."""
    sqlite_out: list[str] = []
    postgres_out: list[str] = []
    names: set[str] = set()
    for kind, piece in read_sql(sql):
        if kind == "positional":
            raise Untranslatable("a ? (write :name parameters; jsonb's ? operators have function forms)")
        if kind == "name":
            names.add(piece[1:])
            sqlite_out.append(piece)
            postgres_out.append(f"%({piece[1:]})s")
        elif kind == "percent":
            sqlite_out.append("%")
            postgres_out.append("%%")
        else:
            sqlite_out.append(piece)
            postgres_out.append(piece.replace("%", "%%") if kind in ("quoted", "comment") else piece)
    return "".join(sqlite_out), "".join(postgres_out), names


def _refuse(unreadable: str | None) -> None:
    if unreadable is not None:
        raise Untranslatable(unreadable)


def unreadable_at(sql: str, i: int) -> str | None:
    """What at `sql[i]` no reading of placeholders can tell apart from one or from a quote, if
    anything: a block comment, a dollar-quoted string, an E'' string."""
    char = sql[i]
    if char == "/" and sql.startswith("/*", i):
        return "a block comment (write -- comments)"
    if char == "$" and _DOLLAR_QUOTE.match(sql, i):
        return "a dollar-quoted string"
    if (
        char in "eE"
        and sql.startswith("'", i + 1)
        and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_"))
    ):
        return "an E'' string"
    return None
