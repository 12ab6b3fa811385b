"""Pure: orderly pop's per-queue state (5.x ConsumerOrderInfoManager). An orderly pop
(order=true) takes a batch from a queue without a checkpoint and without moving the group's
offset; the queue is then blocked for the group until every message of the batch is acked or
its invisible time passes, when the same messages are popped again with their consumed count
raised (orderCountInfo). Acks move the offset to the first unacked message of the batch.

Kept in memory only: the committed offset never passes an unacked message, so after a crash
the queue is popped again from there (the counts restart at 0); order and messages are kept.
"""

from __future__ import annotations

import attrs

Key = tuple[str, str, int]  # topic, group, queueId


@attrs.define
class OrderInfo:
    attempt_id: str | None
    pop_time: int
    visible_at: int
    offsets: list[int]
    counts: dict[int, int] = attrs.Factory(dict)  # times consumed before, > 0 only
    acked: int = 0  # bit i: offsets[i]

    @property
    def all_acked(self) -> bool:
        return self.acked == (1 << len(self.offsets)) - 1

    def next_offset(self) -> int:
        """Where the group's offset may go: the first unacked message, or past the batch."""
        for i, offset in enumerate(self.offsets):
            if not self.acked >> i & 1:
                return offset
        return self.offsets[-1] + 1


class OrderInfoTable:
    def __init__(self) -> None:
        self.table: dict[Key, OrderInfo] = {}

    def blocked(self, key: Key, attempt_id: str | None, now_ms: int) -> bool:
        info = self.table.get(key)
        if info is None or info.all_acked:
            return False
        if attempt_id is not None and attempt_id == info.attempt_id:
            return False  # the same request again (the client retried it): same answer
        return now_ms < info.visible_at

    def update(
        self,
        key: Key,
        attempt_id: str | None,
        pop_time: int,
        invisible_time: int,
        offsets: list[int],
    ) -> dict[int, int]:
        """Record a batch popped; the consumed count of each of its offsets."""
        old = self.table.get(key)
        counts: dict[int, int] = {}
        if old is not None:
            for offset in offsets:
                before = old.counts.get(offset, 0)
                again = offset in old.offsets and (
                    attempt_id is None or attempt_id != old.attempt_id
                )
                if before or again:
                    counts[offset] = before + (1 if again else 0)
        self.table[key] = OrderInfo(
            attempt_id, pop_time, pop_time + invisible_time, list(offsets), counts
        )
        return {offset: counts.get(offset, 0) for offset in offsets}

    def ack(self, key: Key, queue_offset: int, pop_time: int) -> int | None:
        """The offset the group may commit after this ack; None when the ack matches no batch
        in flight (a stale popTime, an offset not popped)."""
        info = self.table.get(key)
        if info is None or info.pop_time != pop_time or queue_offset not in info.offsets:
            return None
        info.acked |= 1 << info.offsets.index(queue_offset)
        next_offset = info.next_offset()
        if info.all_acked:
            del self.table[key]
        return next_offset

    def change_invisible_time(self, key: Key, pop_time: int, visible_at: int) -> bool:
        info = self.table.get(key)
        if info is None or info.pop_time != pop_time:
            return False
        info.visible_at = visible_at
        return True

    def in_flight(self, group: str, topic: str) -> dict[int, int]:
        """Per queue: the oldest unacked offset of ``group``'s orderly batch."""
        return {
            key[2]: info.next_offset()
            for key, info in self.table.items()
            if key[0] == topic and key[1] == group and not info.all_acked
        }
