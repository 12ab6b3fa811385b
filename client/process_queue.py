"""ProcessQueue: the messages pulled for one queue and not yet consumed. The offset a consumer
may commit is the smallest one still in flight (or one past the largest seen), so a slow
message holds the committed offset back and nothing is skipped after a crash."""

from __future__ import annotations

import time

import attrs
import trio

from remoting.message import MessageExt

LOCK_MAX_LIVE_S = 30.0


@attrs.define(eq=False)
class ProcessQueue:
    msgs: dict[int, MessageExt] = attrs.Factory(dict)
    size_bytes: int = 0
    max_offset_seen: int = -1
    dropped: bool = False
    locked: bool = False  # an orderly consumer's broker lock on this queue (see lock_valid)
    lock_time: float = 0.0  # trio.current_time() of the last lock or renewal
    # Held while an orderly consumer handles a message: a queue leaving this consumer is
    # unlocked at the broker only after the message in hand is done (Java's consumeLock).
    consume_lock: trio.Lock = attrs.Factory(trio.Lock)
    arrived: trio.Event = attrs.Factory(trio.Event)
    consumed: trio.Event = attrs.Factory(trio.Event)
    cancel_scope: trio.CancelScope = attrs.Factory(trio.CancelScope)  # the puller
    consume_scope: trio.CancelScope = attrs.Factory(trio.CancelScope)  # an orderly consumer
    last_pull_ms: int = 0  # wall-clock times, for GET_CONSUMER_RUNNING_INFO
    last_consume_ms: int = 0

    def drop(self, *, finish_current: bool = False) -> None:
        """The queue left this consumer (rebalance, reset, shutdown): stop pulling it. With
        ``finish_current`` an orderly consumer finishes the message in hand, then stops."""
        self.dropped = True
        self.cancel_scope.cancel()
        if finish_current:
            self.arrived.set()  # wake it if it waits for messages: it sees ``dropped``
        else:
            self.consume_scope.cancel()

    def relocked(self, locked: bool) -> None:
        self.locked = locked
        if locked:
            self.lock_time = trio.current_time()

    def lock_valid(self) -> bool:
        """Ours to consume: locked, and renewed within the client's lock lifetime (30 s, as
        Java's; shorter than the broker's 60 s, so the broker never hands it to another
        consumer while we still think it ours)."""
        return self.locked and trio.current_time() - self.lock_time < LOCK_MAX_LIVE_S

    @property
    def count(self) -> int:
        return len(self.msgs)

    def put(self, msgs: list[MessageExt]) -> None:
        self.last_pull_ms = time.time_ns() // 1_000_000
        for msg in msgs:
            if msg.queue_offset not in self.msgs:
                self.msgs[msg.queue_offset] = msg
                self.size_bytes += len(msg.body)
            self.max_offset_seen = max(self.max_offset_seen, msg.queue_offset)
        event, self.arrived = self.arrived, trio.Event()
        event.set()

    def remove(self, msgs: list[MessageExt]) -> int:
        """Drop consumed messages; returns the offset to commit (-1: nothing to commit)."""
        self.last_consume_ms = time.time_ns() // 1_000_000
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
