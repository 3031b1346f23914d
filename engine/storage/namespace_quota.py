"""A quota per namespace, so that one tenant filling its share leaves the others room to write.

`--max-db-mb` caps the whole file: one token that fills it refuses every other tenant's writes,
and PostgreSQL has no such cap. `--max-namespace-mb` caps what one namespace keeps: the text of
its pages (their full text) and of the rows that keep text a client chose (bound values, tool
calls, hook events: storage/log_limits.py), as page_counts keeps both per namespace by trigger,
read in one lookup at the start of each write. A write that finds its namespace over the quota is refused with a
sentence; one write may take it past by its own size, and the next is refused. Removals (forget,
expired pages) are never refused, and free the room they remove.
"""

from memvm.engine.errors import NamespaceFull
from memvm.engine.storage.api import Writes
from memvm.engine.storage.statements import statement

# A megabyte of text, in characters (as the quota is stated to the operator).
CHARS_PER_MB = 1_000_000

_TEXT_KEPT = statement(
    "namespace_quota.text kept", "SELECT chars, log_chars FROM page_counts WHERE namespace = :namespace"
)


async def check_namespace_room(conn: Writes, namespace: str, quota_mb: int) -> None:
    """Refuse (NamespaceFull) a write to `namespace` while the text it keeps is over `quota_mb`."""
    row = await conn.one(_TEXT_KEPT, namespace=namespace)
    if row is None:
        return
    pages, logs = int(row["chars"]), int(row["log_chars"])
    if pages + logs > quota_mb * CHARS_PER_MB:
        raise NamespaceFull(quota_mb, mostly_logs=logs > pages)
