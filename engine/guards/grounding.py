"""Where the numbers in a tool call's arguments came from: `check_ungrounded`.

A number in the arguments is grounded when the user wrote it, when it is a structural constant,
or when it sits inside a structured tool result that was bound. A number equal to a bound value
is listed with that value's `$vN` as the suggestion: passing the reference keeps the exact value
and shows where it came from. Every other number came from nowhere. All lookups are batched
through indexes, and the message names at most a handful of numbers, however many bindings exist.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from memvm.engine.guards.bindings import bound_values
from memvm.engine.guards.literals import Literal, find_literals, numbers_in_text, short
from memvm.engine.guards.references import Resolution, referenced_names, resolve, sequential_name
from memvm.engine.models.guards import GroundingResult, GroundingVerdict, UngroundedLiteral
from memvm.engine.storage.api import Reads, Writes
from memvm.engine.storage.statements import Template, statement, template

MESSAGE_ITEMS = 5
# A message with more numbers than this is data, not a conversation turn to ground against.
MAX_NUMBERS_PER_MESSAGE = 1_000
# Literals with decimals get a second, rounding-tolerant lookup; bounded so one call stays cheap.
MAX_ROUNDED_LOOKUPS = 20

_REGISTER_USER_NUMBER = statement(
    "grounding.register user number",
    """
INSERT INTO user_numbers (namespace, session, number) VALUES (:namespace, :session, :number)
ON CONFLICT DO NOTHING
""",
)

_USER_NUMBERS_IN = template(
    "grounding.user numbers in",
    """
SELECT number FROM user_numbers WHERE namespace = :namespace AND session = :session AND number IN ({marks})
""",
    marks=":in0",
)

_FORGET_USER_NUMBER = statement(
    "grounding.forget user number",
    "DELETE FROM user_numbers WHERE namespace = :namespace AND session = :session AND number = :number",
)

# The user's other messages in the session, by the index on (namespace, session, rowid).
_OTHER_USER_TEXTS = statement(
    "grounding.other user texts",
    """
SELECT t.content FROM pages AS p JOIN page_texts AS t ON t.rowid = p.rowid
WHERE p.namespace = :namespace AND p.session = :session AND p.rowid <> :rowid
    AND p.type = 'transcript' AND p.role = 'user'
""",
)

_RESULT_NUMBERS_IN = template(
    "grounding.result numbers in",
    """
SELECT DISTINCT number FROM result_numbers
WHERE namespace = :namespace AND session = :session AND number IN ({marks})
""",
    marks=":in0",
)

_BOUND_NUMBERS_IN = template(
    "grounding.bound numbers in",
    """
SELECT number, MAX(seq) AS seq FROM bindings
WHERE namespace = :namespace AND session = :session AND number IN ({marks})
GROUP BY number
""",
    marks=":in0",
)

_USER_ON_RECORD = statement(
    "grounding.user on record",
    """
SELECT 1 FROM pages
WHERE namespace = :namespace AND session = :session AND type = 'transcript' AND role = 'user'
LIMIT 1
""",
)

# The newest bound value that rounds to the literal (3.14 for 3.14159).
_BOUND_NUMBER_NEAR = statement(
    "grounding.bound number near",
    """
SELECT seq FROM bindings
WHERE namespace = :namespace AND session = :session AND number >= :low AND number <= :high
ORDER BY seq DESC LIMIT 1
""",
)


async def register_user_numbers(conn: Writes, namespace: str, session: str, text: str) -> None:
    """Remember the numbers a user wrote, so tool calls may use them."""
    numbers = _registered(text)
    await conn.executemany(
        _REGISTER_USER_NUMBER,
        [{"namespace": namespace, "session": session, "number": number} for number in sorted(numbers)],
    )


def _registered(text: str) -> set[float]:
    return set(sorted(numbers_in_text(text))[:MAX_NUMBERS_PER_MESSAGE])


async def forget_user_numbers(conn: Writes, namespace: str, session: str, rowid: int, text: str) -> None:
    """Take back the numbers of the user's message `text` (page `rowid`, being forgotten) that no
    other message of the user in `session` holds: a number known only from a forgotten message
    is no longer known."""
    numbers = _registered(text)
    if not numbers:
        return
    for row in await conn.all(_OTHER_USER_TEXTS, namespace=namespace, session=session, rowid=rowid):
        numbers -= _registered(row["content"])
        if not numbers:
            return
    await conn.executemany(
        _FORGET_USER_NUMBER,
        [{"namespace": namespace, "session": session, "number": number} for number in numbers],
    )


async def check_ungrounded(
    conn: Reads,
    *,
    namespace: str,
    session: str,
    args: Any,
    structural_constants: frozenset[float],
    memvm_tools: bool = True,
) -> GroundingResult:
    """Every number in `args` without a source, each with the reference that holds it if one does.

    A caller without memvm's tools (`memvm_tools` false: a host's model under a hook) has no
    references: its arguments are checked as written, and a number equal to a bound value, or a
    rounded copy of one, is a number it read in a result: grounded, with no reference to suggest.
    """
    if memvm_tools:
        known = await bound_values(conn, namespace, session, referenced_names(args))
        resolution = resolve(args, known)
    else:
        resolution = Resolution(resolved=args, missing=[], unreadable={})
    literals = [item for item in find_literals(args) if item.number not in structural_constants]
    numbers = sorted({item.number for item in literals})
    sourced = await _numbers_in(conn, _USER_NUMBERS_IN, namespace, session, numbers)
    sourced |= await _numbers_in(conn, _RESULT_NUMBERS_IN, namespace, session, numbers)
    bound = await _bound_refs(conn, namespace, session, [n for n in numbers if n not in sourced])

    user_on_record = await conn.one(_USER_ON_RECORD, namespace=namespace, session=session) is not None
    ungrounded = []
    rounded_lookups = 0
    for item in literals:
        if item.number in sourced:
            continue
        suggestion = bound.get(item.number)
        if suggestion is None and rounded_lookups < MAX_ROUNDED_LOOKUPS and _decimals(item) > 0:
            rounded_lookups += 1
            suggestion = await _bound_ref_near(conn, namespace, session, item)
        if suggestion is not None and not memvm_tools:
            continue
        ungrounded.append(UngroundedLiteral(path=item.path, value=item.written, suggestion=suggestion))

    if resolution.missing:
        verdict = GroundingVerdict.MISSING_REFS
    elif ungrounded:
        verdict = GroundingVerdict.UNGROUNDED
    else:
        verdict = GroundingVerdict.GROUNDED
    return GroundingResult(
        verdict=verdict,
        ungrounded=ungrounded,
        missing_refs=resolution.missing,
        unreadable_refs=resolution.unreadable,
        resolved_args=None if resolution.missing else resolution.resolved,
        user_messages_on_record=user_on_record,
        message=grounding_message(
            ungrounded,
            resolution.missing,
            user_on_record=user_on_record,
            unreadable=resolution.unreadable,
            memvm_tools=memvm_tools,
        ),
    )


def grounding_message(
    ungrounded: Sequence[UngroundedLiteral],
    missing: Sequence[str],
    *,
    user_on_record: bool = True,
    unreadable: Mapping[str, str] | None = None,
    memvm_tools: bool = True,
) -> str:
    """One short paragraph for the model, naming at most a handful of numbers or references.

    Without memvm's tools (`memvm_tools` false) the model is never told to bind a value; it has no
    references, so it is given no missing ones and no suggestions (see check_ungrounded).
    """
    parts = []
    unreadable = unreadable or {}
    unknown = [reference for reference in missing if reference not in unreadable]
    if unknown:
        parts.append(
            f"Unknown references: {_listing(unknown)}. Nothing is bound under these names; pass a "
            "reference that bind_value returned, or bind the value first."
        )
    if unreadable:
        shown = "; ".join(list(unreadable.values())[:MESSAGE_ITEMS])
        parts.append(
            f"No such part of a bound value: {shown}. Pass a path the value has, or the whole reference."
        )
    copied = [
        f"{item.path}={short(item.value)} -> {item.suggestion}" for item in ungrounded if item.suggestion
    ]
    invented = [f"{item.path}={short(item.value)}" for item in ungrounded if not item.suggestion]
    if copied:
        parts.append(f"Pass references instead of copied values: {_listing(copied)}.")
    if invented:
        read = "a tool result (bind it with bind_value)" if memvm_tools else "a tool result you have read"
        parts.append(
            f"No source for {_listing(invented)}: take numbers from the user or from {read}, never "
            "estimate them."
        )
        if not user_on_record:
            parts.append(
                "No user messages are on record in this session: if the user gave these numbers, go ahead."
            )
    if not parts:
        return "Every number in the arguments comes from the user, a bound result or a structural constant."
    return " ".join(parts)


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MESSAGE_ITEMS])
    more = len(items) - MESSAGE_ITEMS
    return f"{shown} and {more} more" if more > 0 else shown


def _decimals(item: Literal) -> int:
    text = item.written if isinstance(item.written, str) else repr(item.written)
    mantissa = text.strip().rstrip("%").split("e")[0].split("E")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


async def _numbers_in(
    conn: Reads, sql: Template, namespace: str, session: str, numbers: list[float]
) -> set[float]:
    rows = await conn.all_in(sql, numbers, namespace=namespace, session=session)
    return {row["number"] for row in rows}


async def _bound_refs(conn: Reads, namespace: str, session: str, numbers: list[float]) -> dict[float, str]:
    rows = await conn.all_in(_BOUND_NUMBERS_IN, numbers, namespace=namespace, session=session)
    return {row["number"]: f"${sequential_name(row['seq'])}" for row in rows}


async def _bound_ref_near(conn: Reads, namespace: str, session: str, item: Literal) -> str | None:
    half_step = 0.5 * 10 ** -_decimals(item)
    low, high = sorted((item.number - half_step, item.number + half_step))
    row = await conn.one(_BOUND_NUMBER_NEAR, namespace=namespace, session=session, low=low, high=high)
    return f"${sequential_name(row['seq'])}" if row else None
