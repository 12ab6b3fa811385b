"""PullRequestHoldService: pulls that found nothing wait here for a new message.

A held pull waits on its queue until the dispatcher reports a message past the pull's offset
whose tags code its filter accepts, or until its suspend timeout; either way the pull is then
run once more without suspension and its answer sent. A slave's dispatcher does not notify
(as in Java), so a held pull also re-checks its queue every ``check_interval_s``.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from broker.store.types import TagsFilter


class _Waiter:
    __slots__ = ("event", "offset", "tags_filter")

    def __init__(self, offset: int, tags_filter: TagsFilter | None) -> None:
        self.offset = offset
        self.tags_filter = tags_filter
        self.event = trio.Event()


class PullRequestHoldService:
    def __init__(
        self, max_offset: Callable[[str, int], int], *, check_interval_s: float = 5.0
    ) -> None:
        self._max_offset = max_offset
        self.check_interval_s = check_interval_s
        self._waiters: dict[tuple[str, int], list[_Waiter]] = {}

    @property
    def held(self) -> int:
        return sum(len(w) for w in self._waiters.values())

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None
    ) -> None:
        """Called by dispatch (plain code on the event loop) for each new message."""
        waiters = self._waiters.get((topic, queue_id))
        if not waiters:
            return
        keep = []
        for waiter in waiters:
            if max_offset > waiter.offset and (
                tags_code is None
                or waiter.tags_filter is None
                or waiter.tags_filter.is_matched_by_consume_queue(tags_code)
            ):
                waiter.event.set()
            else:
                keep.append(waiter)
        if keep:
            self._waiters[(topic, queue_id)] = keep
        else:
            del self._waiters[(topic, queue_id)]

    def wake_all(self) -> None:
        """Shutdown: every held pull answers now."""
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.event.set()
        self._waiters.clear()

    async def hold(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        tags_filter: TagsFilter | None,
        timeout_s: float,
    ) -> None:
        """Return when a message past ``offset`` may be there, or at the timeout."""
        key = (topic, queue_id)
        deadline = trio.current_time() + timeout_s
        while True:
            if self._max_offset(topic, queue_id) > offset:
                return
            waiter = _Waiter(offset, tags_filter)
            self._waiters.setdefault(key, []).append(waiter)
            try:
                with trio.move_on_at(min(deadline, trio.current_time() + self.check_interval_s)):
                    await waiter.event.wait()
            finally:
                if not waiter.event.is_set():
                    waiters = self._waiters.get(key)
                    if waiters is not None and waiter in waiters:
                        waiters.remove(waiter)
                        if not waiters:
                            del self._waiters[key]
            if waiter.event.is_set() or trio.current_time() >= deadline:
                return
