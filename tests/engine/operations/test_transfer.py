"""The export read through the engine's own storage: the command line's lines, byte for byte, from
one snapshot, on both backends."""

import anyio
import pytest
from memvm.engine.operations.transfer import export_read

from tests.commands import run
from tests.conftest import note, query
from tests.seeding import every_table, opened, seed


def test_an_export_read_through_the_engine_is_the_command_lines_byte_for_byte(migrated):
    db = seed(migrated(), every_table(("acme", "globex")))

    async def read(namespace: str) -> tuple[int, list[str]]:
        lines: list[str] = []

        async def keep(batch: list[str]) -> None:
            lines.extend(batch)

        async with opened(db) as engine, engine.db.read(namespace) as conn:
            return await export_read(conn, namespace, keep), lines

    for namespace in ("acme", "globex"):
        rows, lines = anyio.run(read, namespace)
        command = run("export", "--db", db, "--namespace", namespace)
        assert command.status == 0, command.stderr
        assert "".join(line + "\n" for line in lines) == command.stdout
        assert rows == len(lines) - 2 > 10


@pytest.mark.anyio
async def test_a_stream_hands_over_its_rows_in_batches_from_the_reads_snapshot(engine):
    for n in range(7):
        await engine.session("acme", "s").remember(page=note(f"note {n}"), key=f"k{n}")
    batches = []
    async with engine.db.read("acme") as conn:
        async for batch in conn.stream(
            query("SELECT page_id FROM pages WHERE namespace = :namespace ORDER BY page_id"),
            {"namespace": "acme"},
            batch=3,
        ):
            batches.append([row[0] for row in batch])
            if len(batches) == 1:
                # Written after the read began: not in its snapshot.
                await engine.session("acme", "s").remember(page=note("late"), key="k9")
    assert batches == [["k0", "k1", "k2"], ["k3", "k4", "k5"], ["k6"]]
