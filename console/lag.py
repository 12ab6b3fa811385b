"""Consumer lag per queue, in messages and in seconds, from GET_CONSUME_STATS' figures. Pure:
offsets, store times and the clock come in, figures go out; the arithmetic is metrics/lag.py's,
the same the broker's metrics use.

The store time is read with ``AdminClient.store_time_at`` at the group's offset; it moves on to
the queue's first message when that offset expired (so the console needs no min offset), and
answers None when no message is stored from there on: all the group lags on expired, which
RocketMQ reports as 0 s, and so do we. Only a read that failed leaves a queue without a figure
(None), never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from metrics import lag as shared
from remoting.body import ConsumeStatsList, MessageQueue, OffsetWrapper

# Store times read for one page at most (one pull each): the queues that lag most come first.
MAX_MEASURED_QUEUES = 256


@attrs.frozen
class QueueLag:
    mq: MessageQueue
    broker_offset: int
    consumer_offset: int
    messages: int
    seconds: float | None
    last_timestamp: int  # ms of the group's last commit there, 0: never


NOT_READ = object()  # a store time that was not (or could not be) read


def lag_messages(broker_offset: int, consumer_offset: int) -> int:
    return shared.behind(consumer_offset, broker_offset)


def lag_seconds(messages: int, oldest_store_ms: object, now_ms: int) -> float | None:
    """Seconds the oldest unconsumed message has waited: 0 without lag or when none of it is
    stored any more (``oldest_store_ms`` None); None when its time was ``NOT_READ``."""
    if messages > 0 and oldest_store_ms is NOT_READ:
        return None
    store_ms = oldest_store_ms if isinstance(oldest_store_ms, int) else None
    return shared.latency_ms(messages, store_ms, now_ms) / 1000


def to_measure(
    offsets: Mapping[MessageQueue, OffsetWrapper], limit: int = MAX_MEASURED_QUEUES
) -> list[tuple[MessageQueue, int]]:
    """(queue, the group's offset there) for the queues that lag, most lag first, at most
    ``limit``: where a store time is worth reading."""
    lagging = [
        (lag_messages(w.broker_offset, w.consumer_offset), mq, w.consumer_offset)
        for mq, w in offsets.items()
        if w.broker_offset > w.consumer_offset
    ]
    lagging.sort(key=lambda item: (-item[0], item[1]))
    return [(mq, offset) for _, mq, offset in lagging[:limit]]


def queue_lags(
    offsets: Mapping[MessageQueue, OffsetWrapper],
    store_times: Mapping[MessageQueue, int | None],
    now_ms: int,
) -> list[QueueLag]:
    """Every queue's lag, in queue order; ``store_times`` holds ``store_time_at``'s answer for
    the queues that were measured (None: nothing stored from the group's offset on)."""
    out = []
    for mq, w in sorted(offsets.items()):
        messages = lag_messages(w.broker_offset, w.consumer_offset)
        out.append(
            QueueLag(
                mq=mq,
                broker_offset=w.broker_offset,
                consumer_offset=w.consumer_offset,
                messages=messages,
                seconds=lag_seconds(messages, store_times.get(mq, NOT_READ), now_ms),
                last_timestamp=w.last_timestamp,
            )
        )
    return out


def oldest_seconds(lags: list[QueueLag]) -> float | None:
    """The group's lag in seconds: its longest-waiting queue's (None if none was measured
    while some queue lags)."""
    measured = [q.seconds for q in lags if q.seconds is not None]
    if any(q.messages and q.seconds is None for q in lags) and not measured:
        return None
    return max(measured, default=0.0)


def lag_by_group(answers: list[ConsumeStatsList]) -> dict[str, int]:
    """Every group's lag in messages, summed over brokers' GET_BROKER_CONSUME_STATS answers."""
    out: dict[str, int] = {}
    for stats in answers:
        for entry in stats.consume_stats_list:
            for group, per_topic in entry.items():
                out[group] = out.get(group, 0) + sum(
                    lag_messages(w.broker_offset, w.consumer_offset)
                    for topic_stats in per_topic
                    for w in topic_stats.offset_table.values()
                )
    return out
