"""Who may take one of the read connections, so that one tenant's slow reads never starve another.

Reads run on a few connections (`read_connections`, 4 by default). A read that names its
namespace may take a connection when none of that namespace's reads holds one, or, when one
does, only if another would still be left free: a namespace's first read comes before any
namespace's second. No namespace holds more than half of the connections. So however many slow
searches two busy tenants run at once, a third tenant's read finds a connection as soon as one
read ends, instead of queueing behind all of them.
"""

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio


class ReadSlots:
    def __init__(self, total: int) -> None:
        self._free = total
        self._share = max(1, total // 2)
        self._held: Counter[str] = Counter()
        self._changed = anyio.Condition()

    @asynccontextmanager
    async def take(self, namespace: str | None) -> AsyncIterator[None]:
        """Hold one slot for a read of `namespace` (None: a short read, taken like a first one)."""
        async with self._changed:
            while not self._may_take(namespace):
                await self._changed.wait()
            self._free -= 1
            if namespace is not None:
                self._held[namespace] += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._free += 1
                    if namespace is not None:
                        self._held[namespace] -= 1
                        if not self._held[namespace]:
                            del self._held[namespace]
                    self._changed.notify_all()

    def _may_take(self, namespace: str | None) -> bool:
        holding = 0 if namespace is None else self._held[namespace]
        if holding >= self._share:
            return False
        return self._free >= (1 if holding == 0 else 2)
