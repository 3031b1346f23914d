"""One tenant's slow reads, or two tenants', leave a read connection for everyone else."""

from collections import Counter

import anyio
import pytest

from tests.conftest import note, query

pytestmark = pytest.mark.anyio


async def test_two_tenants_slow_reads_leave_a_third_tenant_a_connection(engine):
    connections = engine.config.read_connections
    for namespace in ("a", "b", "c"):
        await engine.session(namespace, "s").remember(page=note(f"walrus notes of {namespace}"))
    release, settled = anyio.Event(), anyio.Event()
    inside: list[str] = []

    async def slow_reader(namespace: str) -> None:
        async with engine.db.read(namespace) as conn:
            await conn.all(
                query("SELECT count(*) FROM pages WHERE namespace = :namespace"), namespace=namespace
            )
            inside.append(namespace)
            if len(inside) == connections - 1:
                settled.set()
            await release.wait()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            # Each busy tenant asks for every connection: before, the two of them took all four.
            for namespace in ("a", "b"):
                for _ in range(connections):
                    group.start_soon(slow_reader, namespace)
            await settled.wait()
            found = await engine.session("c", "s").search(query="walrus")
            held = sorted(Counter(inside).values())
            release.set()
    assert [hit.snippet for hit in found.results] == ["walrus notes of c"]
    # One busy tenant got its half, the other one connection less: one was left for the third.
    assert held == [connections - 1 - connections // 2, connections // 2]
