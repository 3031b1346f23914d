"""The pages' vectors in the database: which pages wait to be embedded, storing what was made, and
reading a namespace's vectors in the order they were written (see schema_changes._VECTORS)."""

from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass

from memvm.engine.meaning.embedded_text import embedded_text
from memvm.engine.storage.api import Reads, Writes
from memvm.engine.storage.statements import statement

# Newest pages first: what was just said is what a search is likeliest to want by meaning.
_WAITING = statement(
    "meaning.waiting",
    """
SELECT q.page_rowid, q.namespace, q.generation, t.content, p.speaker
FROM pages_to_embed q JOIN page_texts t ON t.rowid = q.page_rowid JOIN pages p ON p.rowid = q.page_rowid
ORDER BY q.page_rowid DESC
LIMIT :batch""",
)

_NEWEST_WAITING = statement("meaning.newest waiting", "SELECT max(page_rowid) FROM pages_to_embed")

# A vector is stored only if the page's text is still the one it was made of (its generation has
# not moved since it was read), and then the page stops waiting.
_STILL_WAITING = (
    "EXISTS (SELECT 1 FROM pages_to_embed WHERE page_rowid = :rowid AND generation = :generation)"
)
_DROP_OLD = statement(
    "meaning.drop old vector", f"DELETE FROM page_vectors WHERE page_rowid = :rowid AND {_STILL_WAITING}"
)
_STORE = statement(
    "meaning.store vector",
    f"""
INSERT INTO page_vectors (page_rowid, namespace, model, vector)
SELECT :rowid, :namespace, :model, :vector WHERE {_STILL_WAITING}""",
)
_DONE = statement(
    "meaning.done", "DELETE FROM pages_to_embed WHERE page_rowid = :rowid AND generation = :generation"
)

# Pages whose vector another model made wait again (the old vector is replaced when the new one is
# stored, and searches read only the current model's meanwhile).
_REQUEUE_OTHER_MODELS = statement(
    "meaning.requeue other models",
    """
INSERT INTO pages_to_embed (page_rowid, namespace)
SELECT page_rowid, namespace FROM page_vectors WHERE model <> :model
ON CONFLICT (page_rowid) DO NOTHING""",
)
_OTHER_MODELS = statement("meaning.other models", "SELECT 1 FROM page_vectors WHERE model <> :model LIMIT 1")

_PROGRESS = statement(
    "meaning.progress",
    """
SELECT (SELECT count(*) FROM page_vectors WHERE model = :model),
       (SELECT count(*) FROM pages_to_embed)""",
)

# A namespace's vectors as of now: how many, and the last written, to tell whether a copy is current.
_EXTENT = statement(
    "meaning.extent",
    "SELECT vectors, last_seq FROM vector_counts WHERE namespace = :namespace AND model = :model",
)
_WRITTEN_AFTER = statement(
    "meaning.written after",
    """
SELECT seq, page_rowid, vector FROM page_vectors
WHERE namespace = :namespace AND model = :model AND seq > :after
ORDER BY seq""",
)


@dataclass(frozen=True)
class Waiting:
    rowid: int
    namespace: str
    generation: int
    text: str  # what is embedded (embedded_text.py)


async def waiting(conn: Reads, batch: int) -> list[Waiting]:
    rows = await conn.all(_WAITING, batch=batch)
    return [Waiting(int(r[0]), str(r[1]), int(r[2]), embedded_text(str(r[3]), r[4])) for r in rows]


async def newest_waiting(conn: Reads) -> int | None:
    row = await conn.one(_NEWEST_WAITING)
    return None if row is None or row[0] is None else int(row[0])


async def store(conn: Writes, model: str, made: Sequence[tuple[Waiting, bytes]]) -> None:
    """Store each page's vector, unless its text changed since it was read."""
    rows = [
        {"rowid": page.rowid, "generation": page.generation, "namespace": page.namespace, "vector": vector}
        for page, vector in made
    ]
    await conn.executemany(_DROP_OLD, [{k: row[k] for k in ("rowid", "generation")} for row in rows])
    await conn.executemany(_STORE, [row | {"model": model} for row in rows])
    await conn.executemany(_DONE, [{k: row[k] for k in ("rowid", "generation")} for row in rows])


async def other_models(conn: Reads, model: str) -> bool:
    """Whether any page has a vector another model made."""
    return await conn.one(_OTHER_MODELS, model=model) is not None


async def requeue_other_models(conn: Writes, model: str) -> None:
    await conn.execute(_REQUEUE_OTHER_MODELS, model=model)


async def progress(conn: Reads, model: str) -> tuple[int, int]:
    """Pages with a vector of `model`, and pages waiting for one, in the whole database."""
    row = await conn.one(_PROGRESS, model=model)
    assert row is not None  # an aggregate always yields a row
    return int(row[0]), int(row[1])


async def extent(conn: Reads, namespace: str, model: str) -> tuple[int, int]:
    row = await conn.one(_EXTENT, namespace=namespace, model=model)
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


async def written_after(
    conn: Reads, namespace: str, model: str, after: int
) -> AsyncIterator[list[tuple[int, int, bytes]]]:
    """The namespace's vectors of `model` written after `after`, in order, a batch at a time:
    (seq, page rowid, vector)."""
    params = {"namespace": namespace, "model": model, "after": after}
    async with aclosing(conn.stream(_WRITTEN_AFTER, params)) as batches:
        async for rows in batches:
            yield [(int(r[0]), int(r[1]), bytes(r[2])) for r in rows]
