"""The rules every stored row keeps, checked in SQL: what `memvm import` refuses and `doctor` reports.

The tools only ever write rows that keep them; a row from elsewhere (an edited export, a file
written by another program) that breaks one turns search, faults or resources into failures, or
shows one namespace's page in another's working set. Rules are kept per table:

- every stored column's declared type: INTEGER a whole number within JSON's exact range (a counter
  at SQLite's limit overflows on its next step), REAL a finite number, TEXT text;
- the closed sets (page types, roles, levels, outcomes...) from the engine's own enums, JSON
  columns that parse, and ranges;
- everything a row points at belongs to the row's namespace (call ids do by construction).

A table added later gets the type rules from its declaration; its own rules go in `_TABLE_RULES`.
"""

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from memvm.engine.guard_config import ToolKind
from memvm.engine.models import (
    Actor,
    GuardRule,
    Modality,
    MutationKind,
    Outcome,
    PageType,
    Role,
    ValueType,
)

# Integers a JSON reader keeps exactly; far past any real counter, far from SQLite's overflow.
MAX_INTEGER = 2**53
# SQLite reads this literal as infinity.
_INFINITY = "9e999"


@dataclass(frozen=True)
class Rule:
    """Rows of `table` WHERE `broken` (SQL built from constants, never from input) break `says`."""

    table: str
    says: str
    broken: str


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


def _level(column: str, *, nullable: bool = False) -> str:
    outside = f"{column} NOT BETWEEN 0 AND 3"
    return f"{column} IS NOT NULL AND {outside}" if nullable else f"{column} IS NULL OR {outside}"


def _not_json(column: str, *, nullable: bool = False, object_only: bool = False) -> str:
    bad = f"json_valid({column}) = 0" + (f" OR json_type({column}) != 'object'" if object_only else "")
    return f"{column} IS NOT NULL AND ({bad})" if nullable else f"{column} IS NULL OR {bad}"


def _other_namespace(table: str, column: str, target: str, target_key: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM {target} AS t WHERE t.{target_key} = {table}.{column} "
        f"AND t.namespace != {table}.namespace)"
    )


_TABLE_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "pages": (
        ("its type is not a page type", _one_of("type", PageType)),
        ("its role is not a role", _one_of("role", Role, nullable=True)),
        ("its modality is not a modality", _one_of("modality", Modality)),
        ("its importance is not between 0 and 1", "importance NOT BETWEEN 0 AND 1"),
        ("pinned is not 0 or 1", "pinned NOT IN (0, 1)"),
        ("its metadata is not a JSON object", _not_json("metadata", object_only=True)),
        (
            "its token counts are negative",
            "min(tokens_full, tokens_reduced, tokens_abstract, tokens_reference) < 0",
        ),
    ),
    "working_set": (
        ("its level is not 0..3", _level("level")),
        (
            "it maps a page of another namespace",
            _other_namespace("working_set", "page_rowid", "pages", "rowid"),
        ),
    ),
    "mutation_log": (
        ("its kind is not a mutation kind", _one_of("kind", MutationKind)),
        ("its actor is not an actor", _one_of("actor", Actor)),
        ("its level before is not 0..3", _level("level_before", nullable=True)),
        ("its level after is not 0..3", _level("level_after", nullable=True)),
    ),
    "bindings": (
        ("its value type is not a value type", _one_of("value_type", ValueType)),
        ("its arguments are not JSON", _not_json("args")),
        ("its value is not JSON", _not_json("value")),
    ),
    "guard_calls": (("its kind is not a tool kind", _one_of("kind", ToolKind)),),
    "guard_strikes": (("its rule is not a guard rule", _one_of("rule", GuardRule)),),
    "page_texts": (
        (
            "its page is of another namespace",
            _other_namespace("page_texts", "rowid", "pages", "rowid"),
        ),
    ),
    # Call ids count per namespace and the links between calls name (namespace, call id), so
    # a call can only ever point at its own namespace's calls; the schema's keys check the rest.
    "tool_calls": (
        ("its outcome is not an outcome", _one_of("outcome", Outcome)),
        ("its arguments are not JSON", _not_json("args")),
        ("its delta is not JSON", _not_json("delta", nullable=True)),
    ),
    "tool_stats": (("it counts more successes than calls", "successes > calls"),),
    "error_patterns": (("its typical fix is not JSON", _not_json("typical_fix", nullable=True)),),
    "success_values": (("its value is not JSON", _not_json("value")),),
}


def _type_rules(table: str, info: list[sqlite3.Row]) -> list[Rule]:
    rules = []
    for column in info:
        name, declared, not_null = column[1], str(column[2]).upper(), column[3]
        if declared == "INTEGER":
            broken = f"typeof({name}) != 'integer' OR {name} NOT BETWEEN -{MAX_INTEGER} AND {MAX_INTEGER}"
            says = f"{name} is not a whole number within ±2**53"
        elif declared == "REAL":
            broken = f"typeof({name}) NOT IN ('integer', 'real') OR abs({name}) = {_INFINITY}"
            says = f"{name} is not a finite number"
        elif declared == "TEXT":
            broken, says = f"typeof({name}) != 'text'", f"{name} is not text"
        else:
            continue
        if not not_null:
            broken = f"{name} IS NOT NULL AND ({broken})"
        rules.append(Rule(table, says, broken))
    return rules


def rules_for(conn: sqlite3.Connection, tables: Iterable[str]) -> list[Rule]:
    """Every rule of the named tables: their columns' types first, then their own rules."""
    rules = []
    for table in tables:
        info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        rules += _type_rules(table, info)
        rules += [Rule(table, says, broken) for says, broken in _TABLE_RULES.get(table, ())]
    return rules


def _key_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    return [col[1] for col in sorted((c for c in info if c[5]), key=lambda c: c[5])] or ["rowid"]


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def violations(conn: sqlite3.Connection, tables: Iterable[str], *, limit: int = 20) -> list[Violation]:
    """Up to `limit` rows that break a rule, each named by its table and key."""
    found: list[Violation] = []
    for rule in rules_for(conn, tables):
        if len(found) >= limit:
            break
        keys = _key_columns(conn, rule.table)
        sql = f'SELECT {", ".join(keys)} FROM "{rule.table}" WHERE {rule.broken} LIMIT {limit - len(found)}'
        for row in conn.execute(sql):
            key = ", ".join(f"{k}={_shown(v)}" for k, v in zip(keys, row, strict=True))
            found.append(Violation(rule.table, f"({key})", rule.says))
    return found
