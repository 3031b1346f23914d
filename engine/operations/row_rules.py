"""The rules every stored row keeps: what `memvm import` refuses and `doctor` reports, on either backend.

The tools only ever write rows that keep them; a row from elsewhere (an edited export, a file
written by another program) that breaks one turns search, faults or resources into failures, or
shows one namespace's page in another's working set. Rules are kept per table:

- every stored column's declared type: INTEGER a whole number within JSON's exact range (a counter
  at SQLite's limit overflows on its next step), REAL a finite number, TEXT text;
- the closed sets (page types, roles, levels, outcomes...) from the engine's own enums, names
  of the shape the tools enforce, JSON columns that Python reads back (engine/stored_json.py),
  counters that never go negative, and ranges;
- token counts that can be the stored text's: no token of the encodings memvm counts in spans
  more than 128 characters, so a count below length/128 is false, and a working set trusting it
  would pack far more than its budget;
- everything a row points at belongs to the row's namespace (call ids do by construction).

Most rules are a SQL condition both backends read the same way. The rest are Python, applied to
values the rows are read for (`Check`): the declared types (SQLite stores any value in any column,
so what a column holds is asked of the value), the names' patterns, Python's own JSON reader, and
the working set's line text. Each table is read once for all of its Python rules.

A table added later gets the type rules from its declaration; its own rules go in `_TABLE_RULES`.
"""

import math
import re
from collections.abc import Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from enum import Enum
from typing import Any

from memvm.engine.guard_config import ToolKind
from memvm.engine.models.guards import GuardRule, ValueType
from memvm.engine.models.pages import Modality, PageType, Role
from memvm.engine.models.procedures import Outcome
from memvm.engine.models.working_set import Actor, MutationKind
from memvm.engine.names import ID_PATTERN, NAME_PATTERN
from memvm.engine.operations.stored_json import MAX_JSON_DEPTH, json_kind
from memvm.engine.operations.tables import Column, Table
from memvm.engine.paging.context_lines import line_body
from memvm.engine.paging.pages import ID_PREFIX
from memvm.engine.storage.api import Reads

# Integers a JSON reader keeps exactly; far past any real counter, far from SQLite's overflow.
MAX_INTEGER = 2**53
# The most characters one token of o200k_base or cl100k_base decodes to (their longest is 128 bytes).
MAX_CHARS_PER_TOKEN = 128
# Who a page is from: the model, a speaker's role, or `tool:NAME` (with ` call N` for an outcome).
_AUTHORS = ("model", *(role.value for role in Role))
_TOOL_PROVENANCE_CHARS = 200
# What each JSON type is called in bindings.value_type.
_VALUE_TYPES = {"number": ValueType.NUMBER, "string": ValueType.STRING, "boolean": ValueType.BOOLEAN}
_VALUE_TYPES |= {"array": ValueType.LIST, "object": ValueType.OBJECT, "null": ValueType.FORGOTTEN}


@dataclass(frozen=True)
class Check:
    """A rule Python applies: the row breaks it when `broken` is true of the values of `reads` (SQL
    expressions over the row, built from constants, never from input)."""

    reads: tuple[str, ...]
    broken: Callable[..., bool]


@dataclass(frozen=True)
class Rule:
    """Rows of `table` that break `says`: those WHERE `broken` (SQL built from constants, never
    from input), or those a Check finds."""

    table: str
    says: str
    broken: str | Check


@dataclass(frozen=True)
class Violation:
    table: str
    key: str
    says: str

    def __str__(self) -> str:
        return f"table {self.table}, row {self.key}: {self.says}"


def _one_of(column: str, members: Iterable[Enum], *, nullable: bool = False) -> str:
    values = ", ".join(f"'{member.value}'" for member in members)
    condition = f"{column} IS NULL OR {column} NOT IN ({values})"
    return f"{column} IS NOT NULL AND {column} NOT IN ({values})" if nullable else condition


def _one_of_text(column: str, values: Iterable[str]) -> str:
    return f"{column} NOT IN ({', '.join(repr(value) for value in values)})"


def _level(column: str, *, nullable: bool = False) -> str:
    outside = f"{column} NOT BETWEEN 0 AND 3"
    return f"{column} IS NOT NULL AND {outside}" if nullable else f"{column} IS NULL OR {outside}"


def _not(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: not test(value)


def _allowing_null(test: Callable[[Any], bool], nullable: bool) -> Callable[[Any], bool]:
    """`test` of a value, where a NULL breaks the rule unless the column may hold one."""
    return lambda value: (not nullable) if value is None else test(value)


def _not_json(column: str, *, nullable: bool = False, object_only: bool = False) -> Check:
    def bad(value: Any) -> bool:
        kind = json_kind(value)
        return kind != "object" if object_only else kind is None

    return Check((column,), _allowing_null(bad, nullable))


def _json_rule(
    what: str, column: str, *, nullable: bool = False, object_only: bool = False
) -> tuple[str, Check]:
    kind = "a JSON object" if object_only else "JSON"
    says = f"its {what} is not {kind} memvm reads (at most {MAX_JSON_DEPTH} levels deep, finite numbers, integers of at most 4300 digits)"
    return says, _not_json(column, nullable=nullable, object_only=object_only)


def _negative(*columns: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"its {column} is negative", f"{column} < 0") for column in columns)


def _too_few_tokens(tokens: str, chars: str) -> str:
    return f"{tokens} * {MAX_CHARS_PER_TOKEN} < {chars}"


def _matches(pattern: str) -> Callable[[Any], bool]:
    shape = re.compile(pattern)
    return lambda text: isinstance(text, str) and shape.fullmatch(text) is not None


def _name_rules(table: str, columns: Iterable[Column]) -> list[Rule]:
    shapes = {"namespace": NAME_PATTERN, "session": NAME_PATTERN, "page_id": ID_PATTERN}
    shapes["result_page_id"] = ID_PATTERN
    rules = []
    for column in columns:
        if column.name in shapes:
            broken = Check(
                (column.name,), _allowing_null(_not(_matches(shapes[column.name])), not column.not_null)
            )
            rules.append(
                Rule(table, f"its {column.name} is not a name of the shape {shapes[column.name]}", broken)
            )
    return rules


def _other_namespace(table: str, column: str, target: str, target_key: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM {target} AS t WHERE t.{target_key} = {table}.{column} "
        f"AND t.namespace != {table}.namespace)"
    )


# The text of the level a working set row maps its page at.
_LEVEL_TEXT = """(SELECT CASE working_set.level WHEN 0 THEN t.content WHEN 1 THEN t.reduced
    WHEN 2 THEN p.abstract ELSE p.reference END
    FROM pages AS p JOIN page_texts AS t ON t.rowid = p.rowid WHERE p.rowid = working_set.page_rowid)"""
_PAGE_TEXT = "(SELECT length({column}) FROM page_texts AS t WHERE t.rowid = pages.rowid)"
_PROVENANCE = (
    f"provenance NOT IN ({', '.join(repr(author) for author in _AUTHORS)}) "
    f"AND NOT (substr(provenance, 1, 5) = 'tool:' AND length(provenance) BETWEEN 6 AND {_TOOL_PROVENANCE_CHARS})"
)


def _line_too_long(line_tokens: Any, text: Any) -> bool:
    if not isinstance(text, str) or not isinstance(line_tokens, int | float):
        return False  # no text to measure, or a count the type rules refuse
    return line_tokens * MAX_CHARS_PER_TOKEN < len(line_body(text))


def _not_its_value_type(value_type: Any, value: Any) -> bool:
    kind = _VALUE_TYPES.get(json_kind(value) or "")
    return bool(value_type != (kind.value if kind else None))


_TABLE_RULES: dict[str, tuple[tuple[str, str | Check], ...]] = {
    "sessions": _negative("turn", "faults_this_turn"),
    "id_counters": (
        ("its prefix is not a page id prefix", _one_of_text("prefix", ID_PREFIX.values())),
        *_negative("last"),
    ),
    "pages": (
        ("its type is not a page type", _one_of("type", PageType)),
        ("its role is not a role", _one_of("role", Role, nullable=True)),
        ("its modality is not a modality", _one_of("modality", Modality)),
        ("its importance is not between 0 and 1", "importance NOT BETWEEN 0 AND 1"),
        ("pinned is not 0 or 1", "pinned NOT IN (0, 1)"),
        ("its provenance is not model, a role or tool:NAME", _PROVENANCE),
        _json_rule("metadata", "metadata", object_only=True),
        (
            "its token counts are negative",
            "tokens_full < 0 OR tokens_reduced < 0 OR tokens_abstract < 0 OR tokens_reference < 0",
        ),
        (
            f"its token counts are below its texts' length / {MAX_CHARS_PER_TOKEN}",
            " OR ".join(
                (
                    _too_few_tokens("tokens_full", _PAGE_TEXT.format(column="t.content")),
                    _too_few_tokens("tokens_reduced", _PAGE_TEXT.format(column="t.reduced")),
                    _too_few_tokens("tokens_abstract", "length(abstract)"),
                    _too_few_tokens("tokens_reference", "length(reference)"),
                )
            ),
        ),
        *_negative("access_count", "turn", "search_chars"),
    ),
    "working_set": (
        ("its level is not 0..3", _level("level")),
        (
            "it maps a page of another namespace",
            _other_namespace("working_set", "page_rowid", "pages", "rowid"),
        ),
        (
            f"its line tokens are below its line's length / {MAX_CHARS_PER_TOKEN}",
            Check(("line_tokens", _LEVEL_TEXT), _line_too_long),
        ),
        *_negative("line_tokens", "faulted_turn", "last_access_turn"),
    ),
    "mutation_log": (
        ("its kind is not a mutation kind", _one_of("kind", MutationKind)),
        ("its actor is not an actor", _one_of("actor", Actor)),
        ("its level before is not 0..3", _level("level_before", nullable=True)),
        ("its level after is not 0..3", _level("level_after", nullable=True)),
        *_negative("turn"),
    ),
    "bindings": (
        ("its value type is not a value type", _one_of("value_type", ValueType)),
        _json_rule("arguments", "args"),
        _json_rule("value", "value"),
        ("its value type is not its value's JSON type", Check(("value_type", "value"), _not_its_value_type)),
        *_negative("turn"),
    ),
    "binding_aliases": _negative("seq"),
    "result_numbers": _negative("seq"),
    "guard_calls": (("its kind is not a tool kind", _one_of("kind", ToolKind)), *_negative("turn")),
    "guard_strikes": (
        ("its rule is not a guard rule", _one_of("rule", GuardRule)),
        *_negative("turn", "count"),
    ),
    "page_texts": (
        (
            "its page is of another namespace",
            _other_namespace("page_texts", "rowid", "pages", "rowid"),
        ),
    ),
    "page_versions": (
        (
            "its page is of another namespace",
            _other_namespace("page_versions", "page_rowid", "pages", "rowid"),
        ),
        ("its type is not a page type", _one_of("type", PageType)),
        ("its version is below 1", "version < 1"),
        (
            f"its token count is below its text's length / {MAX_CHARS_PER_TOKEN}",
            _too_few_tokens("tokens_full", "length(content)"),
        ),
        ("it was superseded before it was written", "superseded_at < written_at"),
        *_negative("tokens_full"),
    ),
    # Call ids count per namespace and the links between calls name (namespace, call id), so
    # a call can only ever point at its own namespace's calls; the schema's keys check the rest.
    # The statistics' last calls are only ever shown as numbers, never looked up, so they are
    # held to no call that must still exist (a database migrated from global call ids keeps
    # some that name none).
    "tool_calls": (
        ("its outcome is not an outcome", _one_of("outcome", Outcome)),
        _json_rule("arguments", "args"),
        _json_rule("delta", "delta", nullable=True),
        *_negative("turn", "duration_ms"),
    ),
    "tool_stats": (
        ("it counts more successes than calls", "successes > calls"),
        ("it counts more timed calls than calls", "duration_count > calls"),
        *_negative("calls", "successes", "duration_total", "duration_count", "last_call_id"),
    ),
    "error_patterns": (
        _json_rule("typical fix", "typical_fix", nullable=True, object_only=True),
        *_negative("count", "fix_count", "last_call_id", "fix_call_id"),
    ),
    "success_values": (_json_rule("value", "value"), *_negative("count", "last_call_id")),
}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_INTEGER <= value <= MAX_INTEGER


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# What a value of each declared type must be, and what a row that holds another breaks.
_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "INTEGER": (_whole, "is not a whole number within ±2**53"),
    "REAL": (_finite, "is not a finite number"),
    "TEXT": (lambda value: isinstance(value, str), "is not text"),
}


def _type_rules(table: str, columns: Iterable[Column]) -> list[Rule]:
    rules = []
    for column in columns:
        if column.type not in _TYPES:
            continue
        fits, says = _TYPES[column.type]
        check = Check((column.name,), _allowing_null(_not(fits), not column.not_null))
        rules.append(Rule(table, f"{column.name} {says}", check))
    return rules


def rules_for(tables: Iterable[Table]) -> list[Rule]:
    """Every rule of the tables: their columns' types first, then their own rules."""
    rules = []
    for table in tables:
        rules += _type_rules(table.name, table.declared)
        rules += _name_rules(table.name, table.declared)
        rules += [Rule(table.name, says, broken) for says, broken in _TABLE_RULES.get(table.name, ())]
    return rules


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


async def violations(conn: Reads, tables: Iterable[Table], *, limit: int = 20) -> list[Violation]:
    """Up to `limit` rows that break a rule, each named by its table and key, in the rules' order."""
    found: list[Violation] = []
    for table in tables:
        if len(found) >= limit:
            break
        rules = rules_for([table])
        hits: dict[int, list[tuple[Any, ...]]] = {}
        for index, rule in enumerate(rules):
            if isinstance(rule.broken, str):
                sql = f'SELECT {_names(table.key)} FROM "{table.name}" WHERE {rule.broken} LIMIT {limit}'
                hits[index] = [tuple(row) for row in await conn.all(sql)]
        hits |= await _checked(conn, table, rules, limit)
        for index, rule in enumerate(rules):
            for key in hits[index]:
                shown = ", ".join(f"{k}={_shown(v)}" for k, v in zip(table.key, key, strict=True))
                found.append(Violation(rule.table, f"({shown})", rule.says))
    return found[:limit]


async def _checked(
    conn: Reads, table: Table, rules: list[Rule], limit: int
) -> dict[int, list[tuple[Any, ...]]]:
    """The keys of the rows each Check of `rules` finds (up to `limit` each), reading the table once."""
    checks = {index: rule.broken for index, rule in enumerate(rules) if isinstance(rule.broken, Check)}
    hits: dict[int, list[tuple[Any, ...]]] = {index: [] for index in checks}
    if not checks:
        return hits
    reads = [expression for check in checks.values() for expression in check.reads]
    sql = f'SELECT {_names(table.key)}, {", ".join(reads)} FROM "{table.name}"'
    keys = len(table.key)
    async with aclosing(conn.stream(sql)) as batches:
        async for batch in batches:
            for row in batch:
                values = tuple(row)
                at = keys
                for index, check in checks.items():
                    taken = values[at : at + len(check.reads)]
                    at += len(check.reads)
                    if len(hits[index]) < limit and check.broken(*taken):
                        hits[index].append(values[:keys])
            if all(len(found) >= limit for found in hits.values()):
                break
    return hits


def _names(columns: Iterable[str]) -> str:
    return ", ".join(f'"{column}"' for column in columns)
