"""What a page leaves in other tables, forgotten with it.

A page's own rows go with it: its texts, its search entries, its place in every working set, and
any row of a table that references it ON DELETE CASCADE. Two kinds of page also left text
elsewhere when they were written:

- a tool result: the value bound from the same result ($vN, in the call's session and in the
  caller's own when that session was ad hoc) holds the result itself, and the numbers inside it
  were kept for grounding (registered as read, for a result too large to bind); the call that
  produced it names it;
- a message of the user: the numbers in it were registered, so that tool calls may use them.

The mutation log is append-only and keeps what happened to the page's id (a generated id, or the
key a writer chose), never its text; the call that produced a tool result keeps its arguments.
"""

import re

from memvm.engine.guards.bindings import forget_bound_result
from memvm.engine.guards.grounding import forget_user_numbers
from memvm.engine.guards.references import sequence_of
from memvm.engine.models.pages import Level, Page, PageType, Role
from memvm.engine.storage.api import Writes
from memvm.engine.storage.statements import statement

# record_tool_outcome writes a result page's provenance as "tool:NAME call N": N is the call id,
# which the call is found by (through its unique index) without a scan for its result page.
_CALL_ID = re.compile(r" call (\d+)\Z")

_RESULT_CALL = statement(
    "derived.result call",
    "SELECT session, ref FROM tool_calls "
    "WHERE namespace = :namespace AND call_id = :call_id AND result_page_id = :page_id",
)
_UNLINK_RESULT = statement(
    "derived.unlink result",
    "UPDATE tool_calls SET result_page_id = NULL WHERE namespace = :namespace AND call_id = :call_id",
)


async def forget_derived(conn: Writes, namespace: str, page: Page) -> None:
    """Forget what `page` left in other tables; the caller deletes the page itself."""
    if page.type is PageType.TOOL_RESULT:
        await _forget_tool_result(conn, namespace, page)
    elif page.type is PageType.TRANSCRIPT and page.role is Role.USER:
        await forget_user_numbers(conn, namespace, page.session, page.rowid, page.content(Level.FULL))


async def _forget_tool_result(conn: Writes, namespace: str, page: Page) -> None:
    found = _CALL_ID.search(page.provenance)
    if found is None:
        return
    call_id = int(found.group(1))
    call = await conn.one(_RESULT_CALL, namespace=namespace, call_id=call_id, page_id=page.page_id)
    if call is None:
        return
    seq = sequence_of(call["ref"].removeprefix("$")) if call["ref"] else None
    if seq is not None:
        await forget_bound_result(conn, namespace, call["session"], seq)
    else:
        await forget_user_numbers(conn, namespace, call["session"], page.rowid, page.content(Level.FULL))
    await conn.execute(_UNLINK_RESULT, namespace=namespace, call_id=call_id)
