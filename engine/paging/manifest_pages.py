"""What the manifest lists: the pages most worth knowing about, and the counts.

At a million pages the manifest cannot list everything, so it lists a bounded few: among the most
recently used pages, those that weigh most by importance, access and pinning.
"""

from memvm.engine.models.pages import PageType, Role
from memvm.engine.models.working_set import ManifestPage
from memvm.engine.paging.pages import expired_count_sql, level_tokens
from memvm.engine.paging.projects import visible_sql
from memvm.engine.storage.api import Reads
from memvm.engine.storage.statements import statement, template

# How many recent pages are weighed at most: bounds the query at any database size.
_RECENT_WINDOW = 500

_CANDIDATE_COLUMNS = """rowid, namespace, page_id, type, role, session, reference, importance, pinned, access_count,
           last_access, tokens_full, tokens_reduced, tokens_abstract, tokens_reference"""

# Pinned pages are candidates however long ago they were used (on their partial index), beside the
# most recently used window.
_AVAILABLE = template(
    "manifest_pages.available",
    f"""
SELECT p.page_id, p.type, p.role, p.session, p.reference, p.importance, p.pinned,
       p.tokens_full, p.tokens_reduced, p.tokens_abstract, p.tokens_reference
FROM (
    SELECT * FROM (
        SELECT {_CANDIDATE_COLUMNS} FROM live_pages p WHERE namespace = :namespace {{visible}}
        ORDER BY last_access DESC LIMIT :recent_window
    ) AS recent
    UNION
    SELECT * FROM (
        SELECT {_CANDIDATE_COLUMNS} FROM live_pages p WHERE namespace = :namespace {{visible}}
        AND pinned = 1 ORDER BY last_access DESC LIMIT :recent_window
    ) AS pinned
) AS p
WHERE NOT EXISTS (
    SELECT 1 FROM working_set w WHERE w.namespace = p.namespace AND w.session = :session AND w.page_rowid = p.rowid
)
ORDER BY p.pinned DESC, p.importance + 0.05 * CASE WHEN p.access_count < 10 THEN p.access_count ELSE 10 END DESC, p.last_access DESC, p.rowid DESC
LIMIT :limit
""",
    visible=visible_sql("a project")[0],
)

# Expired pages not yet deleted are counted out (few, on their partial index).
_COUNTS = statement(
    "manifest_pages.counts",
    f"""
SELECT
    coalesce((SELECT pages FROM page_counts WHERE namespace = :namespace), 0) - {expired_count_sql(":namespace")} AS pages,
    (SELECT count(*) FROM live_pages WHERE namespace = :namespace AND session = :session) AS session_pages,
    (SELECT count(*) FROM working_set WHERE namespace = :namespace AND session = :session) AS mapped,
    (SELECT count(*) FROM live_pages WHERE namespace = :namespace AND pinned = 1) AS pinned
""",
)


async def available_pages(
    db: Reads, namespace: str, session: str, limit: int, project: str | None = None
) -> list[ManifestPage]:
    """The pages worth listing that `session` has not mapped, none expired, among those a reader
    in `project` sees."""
    visible, params = visible_sql(project)
    rows = await db.all(
        _AVAILABLE.fill(visible=visible),
        namespace=namespace,
        recent_window=_RECENT_WINDOW,
        session=session,
        limit=limit,
        **params,
    )
    return [
        ManifestPage(
            page_id=row["page_id"],
            type=PageType(row["type"]),
            role=Role(row["role"]) if row["role"] else None,
            session=row["session"],
            hint=row["reference"],
            importance=row["importance"],
            pinned=bool(row["pinned"]),
            tokens=level_tokens(row).as_dict(),
        )
        for row in rows
    ]


async def namespace_counts(db: Reads, namespace: str, session: str) -> dict[str, int]:
    """The namespace's pages, the session's, those it maps and the pinned ones, none expired."""
    row = await db.one(_COUNTS, namespace=namespace, session=session)
    assert row is not None
    return {key: int(row[key]) for key in ("pages", "session_pages", "mapped", "pinned")}
