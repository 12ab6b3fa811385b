"""ProcessQueue: the messages pulled for one queue and not yet consumed. The offset a consumer
may commit is the smallest one still in flight (or one past the largest seen), so a slow
message holds the committed offset back and nothing is skipped after a crash."""

from __future__ import annotations

import attrs
import trio

from remoting.message import MessageExt


@attrs.define(eq=False)
class ProcessQueue:
    msgs: dict[int, MessageExt] = attrs.Factory(dict)
    size_bytes: int = 0
    max_offset_seen: int = -1
    dropped: bool = False
    locked: bool = False
    arrived: trio.Event = attrs.Factory(trio.Event)
    consumed: trio.Event = attrs.Factory(trio.Event)
    cancel_scope: trio.CancelScope = attrs.Factory(trio.CancelScope)  # the puller
    consume_scope: trio.CancelScope = attrs.Factory(trio.CancelScope)  # an orderly consumer

    def drop(self) -> None:
        """The queue left this consumer (rebalance, reset, shutdown): stop pulling it."""
        self.dropped = True
        self.cancel_scope.cancel()
        self.consume_scope.cancel()

    @property
    def count(self) -> int:
        return len(self.msgs)

    def put(self, msgs: list[MessageExt]) -> None:
        for msg in msgs:
            if msg.queue_offset not in self.msgs:
                self.msgs[msg.queue_offset] = msg
                self.size_bytes += len(msg.body)
            self.max_offset_seen = max(self.max_offset_seen, msg.queue_offset)
        event, self.arrived = self.arrived, trio.Event()
        event.set()

    def remove(self, msgs: list[MessageExt]) -> int:
        """Drop consumed messages; returns the offset to commit (-1: nothing to commit)."""
        for msg in msgs:
            if self.msgs.pop(msg.queue_offset, None) is not None:
                self.size_bytes -= len(msg.body)
        event, self.consumed = self.consumed, trio.Event()
        event.set()
        if self.msgs:
            return min(self.msgs)
        return self.max_offset_seen + 1 if self.max_offset_seen >= 0 else -1

    def first(self, n: int) -> list[MessageExt]:
        """The ``n`` lowest offsets in flight (orderly consumption takes them in order)."""
        return [self.msgs[offset] for offset in sorted(self.msgs)[:n]]
