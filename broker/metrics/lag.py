"""Consumer lag in messages and in time, per queue and per group and topic. Pure: offsets and
store times in, figures out; the console may import it as well (it has the same inputs from
GET_CONSUME_STATS and QUERY_CONSUME_TIME_SPAN).

Lag in time is RocketMQ 5's ``rocketmq_consumer_lag_latency``: now minus the store time of
the oldest message the group has not consumed, 0 when it has consumed everything. A group that
never committed on a queue has no lag there (RocketMQ 5 reads its offset as the queue's end);
one whose offset fell below the queue's first message (expired) is behind by everything the
queue holds past its offset, and its oldest unconsumed message is the queue's first.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

StoreTimeAt = Callable[[int], int]  # queue offset -> store time (ms), <= 0 when unreadable


@attrs.frozen
class Lag:
    messages: int = 0
    oldest_store_ms: int = 0  # 0: nothing unconsumed, or its time could not be read

    def latency_ms(self, now_ms: int) -> int:
        return max(0, now_ms - self.oldest_store_ms) if self.oldest_store_ms > 0 else 0

    def merge(self, other: Lag) -> Lag:
        """Several queues' lag: messages add up, the oldest message is the oldest of all."""
        times = [t for t in (self.oldest_store_ms, other.oldest_store_ms) if t > 0]
        return Lag(self.messages + other.messages, min(times) if times else 0)


NO_LAG = Lag()


def total_lag(lags: list[Lag]) -> Lag:
    """Several queues' lag at once (``Lag.merge`` over all, without the objects between)."""
    times = [lag.oldest_store_ms for lag in lags if lag.oldest_store_ms > 0]
    return Lag(sum(lag.messages for lag in lags), min(times) if times else 0)


def queue_lag(
    consumer_offset: int, min_offset: int, max_offset: int, store_time_at: StoreTimeAt
) -> Lag:
    """The lag of one queue (offsets in ConsumeQueue units; ``max_offset`` is the next unit)."""
    if consumer_offset < 0 or consumer_offset >= max_offset:
        return NO_LAG
    oldest = max(consumer_offset, min_offset)
    messages = max_offset - consumer_offset
    if oldest >= max_offset:
        return Lag(messages, 0)
    store_ms = store_time_at(oldest)
    return Lag(messages, store_ms if store_ms > 0 else 0)
