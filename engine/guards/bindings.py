"""Bound tool results: `$v1`, `$v2`… per session, with optional aliases, stored in SQLite.

Binding the same call with the same value again returns the reference it already has, so a
retried bind never burns a new number. An alias names the latest value bound under it, the way a
variable does. Every lookup goes through an index: ten thousand bindings cost what ten do.
"""

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memvm.engine.errors import InvalidArgument
from memvm.engine.guards.literals import as_number, call_hash, canonical_json, numbers_in_text, walk
from memvm.engine.guards.references import sequence_of, sequential_name
from memvm.engine.models.guards import BindResult, ValueType
from memvm.engine.storage.api import Reads, Writes
from memvm.engine.storage.statements import statement, template

# Numbers inside one structured result that are kept for grounding; past this, a result is data
# to read, not a source of numbers to copy.
MAX_RESULT_NUMBERS = 500
MAX_VALUE_CHARS = 1_000_000

_SAME_CALL_AND_VALUE = statement(
    "bindings.same call and value",
    """
SELECT seq, value_type FROM bindings
WHERE namespace = :namespace AND session = :session AND call_hash = :call_hash AND value = :value
ORDER BY seq DESC LIMIT 1
""",
)

# Bound again: the value is this turn's result of the call now.
_RENEW = statement(
    "bindings.renew",
    "UPDATE bindings SET turn = :turn WHERE namespace = :namespace AND session = :session AND seq = :seq",
)

# The next number is taken inside the insert: the write lock makes it the session's next.
_INSERT = statement(
    "bindings.insert",
    """
INSERT INTO bindings (
    namespace, session, seq, tool, args, call_hash, value, value_type, number, turn, created_at
) VALUES (
    :namespace, :session,
    (SELECT COALESCE(MAX(seq), 0) + 1 FROM bindings WHERE namespace = :namespace AND session = :session),
    :tool, :args, :call_hash, :value, :value_type, :number, :turn, :now
)
RETURNING seq
""",
)

_INSERT_RESULT_NUMBER = statement(
    "bindings.insert result number",
    """
INSERT INTO result_numbers (namespace, session, number, seq) VALUES (:namespace, :session, :number, :seq)
ON CONFLICT DO NOTHING
""",
)

_SET_ALIAS = statement(
    "bindings.set alias",
    """
INSERT INTO binding_aliases (namespace, session, alias, seq) VALUES (:namespace, :session, :alias, :seq)
ON CONFLICT (namespace, session, alias) DO UPDATE SET seq = excluded.seq
""",
)

_ALIASES_OF = statement(
    "bindings.aliases of",
    """
SELECT alias FROM binding_aliases WHERE namespace = :namespace AND session = :session AND seq = :seq
ORDER BY alias
""",
)

# A forgotten value keeps its row, so that its number is never given to another value, but is
# never read again: every lookup of a value passes it over.
_LIVE = f"value_type <> '{ValueType.FORGOTTEN.value}'"

_VALUES_BY_SEQ = template(
    "bindings.values by seq",
    f"""
SELECT seq, value FROM bindings
WHERE namespace = :namespace AND session = :session AND {_LIVE} AND seq IN ({{marks}})
""",
    marks=":in0",
)

_VALUES_BY_ALIAS = template(
    "bindings.values by alias",
    """
SELECT a.alias, b.value FROM binding_aliases AS a
JOIN bindings AS b ON b.namespace = a.namespace AND b.session = a.session AND b.seq = a.seq
WHERE a.namespace = :namespace AND a.session = :session AND a.alias IN ({marks})
""",
    marks=":in0",
)

_LATEST_FOR_CALL = statement(
    "bindings.latest for call",
    f"""
SELECT seq, value FROM bindings
WHERE namespace = :namespace AND session = :session AND call_hash = :call_hash AND turn = :turn AND {_LIVE}
ORDER BY seq DESC LIMIT 1
""",
)

_RECENT_VALUES = statement(
    "bindings.recent values",
    f"""
SELECT value FROM bindings
WHERE namespace = :namespace AND session = :session AND tool = :tool AND {_LIVE}
ORDER BY seq DESC LIMIT :limit
""",
)

_BOUND_AT = statement(
    "bindings.bound at",
    """
SELECT call_hash, value, created_at FROM bindings
WHERE namespace = :namespace AND session = :session AND seq = :seq
""",
)

# What was bound from the same call since: the result again (in the caller's own session beside an
# ad-hoc one), or a part of it (bind_value of one field of a result the model read). A later call
# with the same tool and arguments cannot be told apart, and its values go too: forgetting more
# than asked is the side to err on.
_SAME_RESULT = statement(
    "bindings.same result",
    """
SELECT session, seq FROM bindings
WHERE namespace = :namespace AND call_hash = :call_hash AND created_at >= :since AND value != 'null'
""",
)

_FORGET_VALUE = statement(
    "bindings.forget value",
    f"""
UPDATE bindings SET value = 'null', value_type = '{ValueType.FORGOTTEN.value}', number = NULL
WHERE namespace = :namespace AND session = :session AND seq = :seq
""",
)
_FORGET_ALIASES = statement(
    "bindings.forget aliases",
    "DELETE FROM binding_aliases WHERE namespace = :namespace AND session = :session AND seq = :seq",
)
_FORGET_NUMBERS = statement(
    "bindings.forget numbers",
    "DELETE FROM result_numbers WHERE namespace = :namespace AND session = :session AND seq = :seq",
)

# Values one session keeps: the newest, however many calls a long session makes. What refers to a
# value goes before it.
MAX_BINDINGS_PER_SESSION = 1_000
_DROP_OLDEST = tuple(
    statement(
        f"bindings.drop oldest {table}",
        f"DELETE FROM {table} WHERE namespace = :namespace AND session = :session AND seq <= :through",
    )
    for table in ("result_numbers", "binding_aliases", "bindings")
)


@dataclass(frozen=True)
class BoundValue:
    ref: str
    value: Any


def value_type(value: Any) -> ValueType:
    if isinstance(value, bool):
        return ValueType.BOOLEAN
    if isinstance(value, int | float):
        return ValueType.NUMBER
    if isinstance(value, str):
        return ValueType.STRING
    if isinstance(value, list | tuple):
        return ValueType.LIST
    if isinstance(value, dict):
        return ValueType.OBJECT
    raise InvalidArgument("There is no value to bind (it is null); bind only results that hold a value.")


def alias_name(name: str) -> str:
    """The alias as stored, without its dollar sign; vN names are the engine's own."""
    bare = name.removeprefix("$")
    if sequence_of(bare) is not None:
        raise InvalidArgument(
            f"The name '{name}' looks like a sequential reference; choose a name such as 'total'."
        )
    return bare


async def bind(
    conn: Writes,
    *,
    namespace: str,
    session: str,
    turn: int,
    now: float,
    tool: str,
    args: Any,
    value: Any,
    name: str | None,
) -> BindResult:
    """Bind `value` (the result of `tool` called with `args`) as the session's next $vN."""
    kind = value_type(value)
    stored_value = canonical_json(value)
    if len(stored_value) > MAX_VALUE_CHARS:
        raise InvalidArgument(
            f"The value is over {MAX_VALUE_CHARS} characters as JSON; bind the part you will pass on."
        )
    alias = alias_name(name) if name else None
    digest = call_hash(tool, args)
    existing = await conn.one(
        _SAME_CALL_AND_VALUE, namespace=namespace, session=session, call_hash=digest, value=stored_value
    )
    if existing is not None:
        seq, created = existing["seq"], False
        await conn.execute(_RENEW, namespace=namespace, session=session, seq=seq, turn=turn)
    else:
        number = as_number(value) if kind in (ValueType.NUMBER, ValueType.STRING) else None
        inserted = await conn.one(
            _INSERT,
            namespace=namespace,
            session=session,
            tool=tool,
            args=canonical_json(args),
            call_hash=digest,
            value=stored_value,
            value_type=kind.value,
            number=number,
            turn=turn,
            now=now,
        )
        assert inserted is not None  # RETURNING yields the row it wrote
        seq, created = inserted["seq"], True
        if seq > MAX_BINDINGS_PER_SESSION:
            # The session's oldest values make room: a reference to one is then unknown, as a
            # forgotten one is; numbers never repeat, since the newest row stays.
            for drop in _DROP_OLDEST:
                await conn.execute(
                    drop, namespace=namespace, session=session, through=seq - MAX_BINDINGS_PER_SESSION
                )
        # A value that is one number is itself the source, given as its reference; the numbers in
        # a structure or in text are sources to read.
        if kind in (ValueType.LIST, ValueType.OBJECT) or (kind is ValueType.STRING and number is None):
            await conn.executemany(
                _INSERT_RESULT_NUMBER,
                [
                    {"namespace": namespace, "session": session, "number": found, "seq": seq}
                    for found in _numbers_inside(value)
                ],
            )
    if alias is not None:
        await conn.execute(_SET_ALIAS, namespace=namespace, session=session, alias=alias, seq=seq)
    if created:
        aliases = [alias] if alias else []  # a new binding has no other name yet
    else:
        aliases = await _aliases_of(conn, namespace, session, seq)
    return BindResult(
        ref=f"${sequential_name(seq)}",
        aliases=[f"${name}" for name in aliases],
        value_type=kind,
        created=created,
    )


async def bound_values(conn: Reads, namespace: str, session: str, names: Iterable[str]) -> dict[str, Any]:
    """name -> bound value for each of `names` (bare: 'v3', 'total') that is bound."""
    sequences: dict[int, str] = {}
    aliases: list[str] = []
    for name in names:
        seq = sequence_of(name)
        if seq is not None:
            sequences[seq] = name
        else:
            aliases.append(name)
    known: dict[str, Any] = {}
    for row in await conn.all_in(_VALUES_BY_SEQ, list(sequences), namespace=namespace, session=session):
        known[sequences[row["seq"]]] = json.loads(row["value"])
    for row in await conn.all_in(_VALUES_BY_ALIAS, aliases, namespace=namespace, session=session):
        known[row["alias"]] = json.loads(row["value"])
    return known


async def cached_result(
    conn: Reads, namespace: str, session: str, digest: str, turn: int
) -> BoundValue | None:
    """The result bound earlier in `turn` for the call whose `call_hash` is `digest`, if any."""
    row = await conn.one(_LATEST_FOR_CALL, namespace=namespace, session=session, call_hash=digest, turn=turn)
    if row is None:
        return None
    return BoundValue(ref=f"${sequential_name(row['seq'])}", value=json.loads(row["value"]))


async def recent_results(conn: Reads, namespace: str, session: str, tool: str, limit: int) -> list[Any]:
    """The last `limit` values bound for `tool`, newest first."""
    rows = await conn.all(_RECENT_VALUES, namespace=namespace, session=session, tool=tool, limit=limit)
    return [json.loads(row["value"]) for row in rows]


async def forget_bound_result(conn: Writes, namespace: str, session: str, seq: int) -> int:
    """Forget the value bound as `session`'s $v`seq`, and every value bound from the same call
    since (see _SAME_RESULT); returns how many.

    The rows stay, emptied, so that no later value takes their numbers: a model that still holds
    the reference gets "unknown reference" from the guards, never another value under it.
    """
    bound = await conn.one(_BOUND_AT, namespace=namespace, session=session, seq=seq)
    if bound is None or bound["value"] == "null":
        return 0
    same = await conn.all(
        _SAME_RESULT, namespace=namespace, call_hash=bound["call_hash"], since=bound["created_at"]
    )
    for row in same:
        for forget in (_FORGET_ALIASES, _FORGET_NUMBERS, _FORGET_VALUE):
            await conn.execute(forget, namespace=namespace, session=row["session"], seq=row["seq"])
    return len(same)


async def _aliases_of(conn: Writes, namespace: str, session: str, seq: int) -> list[str]:
    rows = await conn.all(_ALIASES_OF, namespace=namespace, session=session, seq=seq)
    return [row["alias"] for row in rows]


def _numbers_inside(value: Any) -> set[float]:
    """Every number the result shows, as a value or within its text: an MCP tool's text content
    ("LIN-4411 Checkout fails"), a command's stdout, a file that was read. A number the agent has
    just read is a number it may pass on."""
    numbers: set[float] = set()
    for _, scalar in walk(value):
        number = as_number(scalar)
        found = (
            {number} if number is not None else numbers_in_text(scalar) if isinstance(scalar, str) else set()
        )
        for each in found:
            if math.isfinite(each):
                numbers.add(each)
                if len(numbers) >= MAX_RESULT_NUMBERS:
                    return numbers
    return numbers
