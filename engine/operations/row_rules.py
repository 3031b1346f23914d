"""The rules every stored row keeps, checked in SQL: what `memvm import` refuses and `doctor` reports.

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

A few rules call Python (`_FUNCTIONS`, registered on the connection checked): the names'
patterns, Python's own JSON reader, and the working set's line text.

A table added later gets the type rules from its declaration; its own rules go in `_TABLE_RULES`.
"""

import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from memvm.engine.guard_config import ToolKind
from memvm.engine.models.guards import GuardRule, ValueType
from memvm.engine.models.pages import Modality, PageType, Role
from memvm.engine.models.procedures import Outcome
from memvm.engine.models.working_set import Actor, MutationKind
from memvm.engine.names import ID_PATTERN, NAME_PATTERN
from memvm.engine.operations.stored_json import MAX_JSON_DEPTH, json_kind
from memvm.engine.paging.context_lines import line_body
from memvm.engine.paging.pages import ID_PREFIX

# Integers a JSON reader keeps exactly; far past any real counter, far from SQLite's overflow.
MAX_INTEGER = 2**53
# SQLite reads this literal as infinity.
_INFINITY = "9e999"
# The most characters one token of o200k_base or cl100k_base decodes to (their longest is 128 bytes).
MAX_CHARS_PER_TOKEN = 128
# Who a page is from: the model, a speaker's role, or `tool:NAME` (with ` call N` for an outcome).
_AUTHORS = ("model", *(role.value for role in Role))
_TOOL_PROVENANCE_CHARS = 200
# What each JSON type is called in bindings.value_type.
_VALUE_TYPES = {"number": ValueType.NUMBER, "string": ValueType.STRING, "boolean": ValueType.BOOLEAN}
_VALUE_TYPES |= {"array": ValueType.LIST, "object": ValueType.OBJECT, "null": ValueType.FORGOTTEN}


def _matches(pattern: str, text: object) -> bool:
    return isinstance(text, str) and re.fullmatch(pattern, text) is not None


def _line_chars(text: object) -> int | None:
    return len(line_body(text)) if isinstance(text, str) else None


_FUNCTIONS: dict[str, tuple[int, Callable[..., str | int | None]]] = {
    "memvm_matches": (2, _matches),
    "memvm_json": (1, json_kind),
    "memvm_line_chars": (1, _line_chars),
}


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


def _one_of_text(column: str, values: Iterable[str]) -> str:
    return f"{column} NOT IN ({', '.join(repr(value) for value in values)})"


def _level(column: str, *, nullable: bool = False) -> str:
    outside = f"{column} NOT BETWEEN 0 AND 3"
    return f"{column} IS NOT NULL AND {outside}" if nullable else f"{column} IS NULL OR {outside}"


def _not_json(column: str, *, nullable: bool = False, object_only: bool = False) -> str:
    bad = f"memvm_json({column}) IS NOT 'object'" if object_only else f"memvm_json({column}) IS NULL"
    return f"{column} IS NOT NULL AND ({bad})" if nullable else f"{column} IS NULL OR {bad}"


def _json_rule(
    what: str, column: str, *, nullable: bool = False, object_only: bool = False
) -> tuple[str, str]:
    kind = "a JSON object" if object_only else "JSON"
    says = f"its {what} is not {kind} memvm reads (at most {MAX_JSON_DEPTH} levels deep, finite numbers, integers of at most 4300 digits)"
    return says, _not_json(column, nullable=nullable, object_only=object_only)


def _negative(*columns: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"its {column} is negative", f"{column} < 0") for column in columns)


def _too_few_tokens(tokens: str, chars: str) -> str:
    return f"{tokens} * {MAX_CHARS_PER_TOKEN} < {chars}"


def _name_rules(table: str, info: list[sqlite3.Row]) -> list[Rule]:
    shapes = {"namespace": NAME_PATTERN, "session": NAME_PATTERN, "page_id": ID_PATTERN}
    shapes["result_page_id"] = ID_PATTERN
    rules = []
    for column in info:
        name, not_null = column[1], column[3]
        if name in shapes:
            broken = f"NOT memvm_matches('{shapes[name]}', {name})"
            broken = broken if not_null else f"{name} IS NOT NULL AND {broken}"
            rules.append(Rule(table, f"its {name} is not a name of the shape {shapes[name]}", broken))
    return rules


def _other_namespace(table: str, column: str, target: str, target_key: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM {target} AS t WHERE t.{target_key} = {table}.{column} "
        f"AND t.namespace != {table}.namespace)"
    )


_LEVEL_TEXT = """(SELECT memvm_line_chars(CASE working_set.level WHEN 0 THEN t.content WHEN 1 THEN t.reduced
    WHEN 2 THEN p.abstract ELSE p.reference END)
    FROM pages AS p JOIN page_texts AS t ON t.rowid = p.rowid WHERE p.rowid = working_set.page_rowid)"""
_PAGE_TEXT = "(SELECT length({column}) FROM page_texts AS t WHERE t.rowid = pages.rowid)"
_PROVENANCE = (
    f"provenance NOT IN ({', '.join(repr(author) for author in _AUTHORS)}) "
    f"AND NOT (provenance GLOB 'tool:?*' AND length(provenance) <= {_TOOL_PROVENANCE_CHARS})"
)
_VALUE_TYPE = (
    "value_type IS NOT CASE memvm_json(value) "
    + " ".join(f"WHEN '{kind}' THEN '{value_type.value}'" for kind, value_type in _VALUE_TYPES.items())
    + " END"
)

_TABLE_RULES: dict[str, tuple[tuple[str, str], ...]] = {
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
            "min(tokens_full, tokens_reduced, tokens_abstract, tokens_reference) < 0",
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
            _too_few_tokens("line_tokens", _LEVEL_TEXT),
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
        ("its value type is not its value's JSON type", _VALUE_TYPE),
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
        rules += _name_rules(table, info)
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
    for name, (arguments, function) in _FUNCTIONS.items():
        conn.create_function(name, arguments, function, deterministic=True)
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
