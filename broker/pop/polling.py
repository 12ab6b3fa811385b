"""PopLongPollingService: pops and notifications with nothing to return wait here for a
message on their topic (or the group's pop retry topic) until their pollTime passes.

Waiters are keyed by topic; dispatch calls ``notify`` for every arrival, which is one dict
lookup while nobody waits. At most ``max_waiters`` wait at once: the rest are answered
POLLING_FULL, as 5.x does past maxPopPollingSize.
"""

from __future__ import annotations

import trio

from broker.store.slotted import Slotted


class PopLongPollingService(Slotted):
    # a counter of the store's plain_idle, read by plain_pass.c from its slot
    # (broker/store/slotted.py)
    __slots__ = ("waiting",)

    def __init__(self, max_waiters: int) -> None:
        self.max_waiters = max_waiters
        self.waiting = 0
        self._waiters: dict[str, set[trio.Event]] = {}

    @property
    def full(self) -> bool:
        return self.waiting >= self.max_waiters

    def notify(self, topic: str) -> None:
        waiters = self._waiters.pop(topic, None)
        if waiters:
            for event in waiters:
                event.set()

    async def wait(self, topics: tuple[str, ...], timeout_s: float) -> None:
        """Until a message arrives on one of ``topics`` or ``timeout_s`` passes."""
        event = trio.Event()
        for topic in topics:
            self._waiters.setdefault(topic, set()).add(event)
        self.waiting += 1
        try:
            with trio.move_on_after(timeout_s):
                await event.wait()
        finally:
            self.waiting -= 1
            for topic in topics:
                waiters = self._waiters.get(topic)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._waiters[topic]
