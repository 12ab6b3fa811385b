"""InFlight: one connection's requests whose handler is still at work (a SYNC_FLUSH send
waiting for its flush, a held pull), by count and by body bytes. Full, the connection stops
reading until one finishes: a client pipelining without end fills its own TCP window instead of
the server's memory. Nothing is refused: a handler that returned an awaitable has done its work
already (a stored message), and answering it SYSTEM_BUSY would make its producer store it twice.
"""

from __future__ import annotations

import trio

MAX_HANDLER_TASKS = 4096
MAX_IN_FLIGHT_BYTES = 64 * 1024 * 1024  # serverChannelMaxInFlightBytes


class InFlight:
    __slots__ = ("_finished", "full", "max_bytes", "max_tasks", "size", "tasks")

    def __init__(
        self, max_tasks: int = MAX_HANDLER_TASKS, max_bytes: int = MAX_IN_FLIGHT_BYTES
    ) -> None:
        self.max_tasks, self.max_bytes = max_tasks, max_bytes
        self.tasks = self.size = 0
        self.full = False  # checked after every read: one attribute, not two comparisons
        self._finished: trio.Event | None = None  # while someone waits for a finish

    def started(self, size: int) -> None:
        self.tasks += 1
        self.size += size
        self.full = self.tasks >= self.max_tasks or self.size > self.max_bytes

    def finished(self, size: int) -> None:
        self.tasks -= 1
        self.size -= size
        self.full = self.tasks >= self.max_tasks or self.size > self.max_bytes
        waiter, self._finished = self._finished, None
        if waiter is not None:
            waiter.set()

    async def wait_finished(self) -> None:
        """Until the next request finishes."""
        if self._finished is None:
            self._finished = trio.Event()
        await self._finished.wait()
