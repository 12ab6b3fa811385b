"""The one lag computation (metrics/lag.py) the broker's metrics and the console share, on the
edges where they used to differ, against what RocketMQ reports (ConsumeStats' diff,
rocketmq-exporter's latency by store time, RocketMQ 5's ConsumerLagCalculator)."""

from __future__ import annotations

import pytest

from console import lag as console_lag
from metrics.lag import Lag, behind, latency_ms, oldest_unconsumed, queue_behind, queue_lag

STORE_MS = {offset: 1_000 + offset for offset in range(100)}


@pytest.mark.parametrize(
    ("consumer", "min_offset", "max_offset", "messages", "oldest"),
    [
        (40, 0, 50, 10, 40),  # behind: aged by the message at its offset
        (50, 0, 50, 0, None),  # at the end
        (60, 0, 50, 0, None),  # ahead of the queue (a truncated ConsumeQueue): never negative
        (-1, 0, 50, 0, None),  # never committed: RocketMQ 5 reads it as the end
        (0, 30, 50, 50, 30),  # expired below the min offset: expired ones still count
        (10, 50, 50, 40, None),  # everything it lags on expired: nothing stored to age it
        (0, 0, 0, 0, None),  # an empty queue
    ],
)
def test_messages_behind_and_the_message_that_ages_them(
    consumer: int, min_offset: int, max_offset: int, messages: int, oldest: int | None
) -> None:
    assert behind(consumer, max_offset) == messages
    assert oldest_unconsumed(consumer, min_offset, max_offset) == oldest
    assert queue_lag(consumer, min_offset, max_offset, STORE_MS.__getitem__) == Lag(
        messages, STORE_MS[oldest] if oldest is not None else 0
    )


def test_latency_is_zero_without_lag_unknown_time_or_a_clock_ahead() -> None:
    assert latency_ms(10, 1_000, 5_000) == 4_000
    assert latency_ms(0, 1_000, 5_000) == 0
    assert latency_ms(10, None, 5_000) == 0
    assert latency_ms(10, -1, 5_000) == 0
    assert latency_ms(10, 6_000, 5_000) == 0


@pytest.mark.parametrize(
    ("consumer", "min_offset", "max_offset"),
    [(40, 0, 50), (0, 30, 50), (10, 50, 50), (50, 0, 50), (60, 0, 50)],
)
def test_the_console_and_the_broker_agree(consumer: int, min_offset: int, max_offset: int) -> None:
    """The console reads a store time with a pull at the group's offset, which moves on to the
    min offset when it expired and finds nothing when all expired (None): the same figures as
    the broker, which reads the ConsumeQueue directly."""
    now_ms = 10_000
    broker = queue_lag(consumer, min_offset, max_offset, STORE_MS.__getitem__)
    pulled = max(consumer, min_offset)
    store_time = STORE_MS[pulled] if pulled < max_offset else None
    messages = console_lag.lag_messages(max_offset, consumer)
    assert messages == broker.messages
    assert console_lag.lag_seconds(messages, store_time, now_ms) == broker.latency_ms(now_ms) / 1000


def test_queue_behind_is_behind_and_oldest_unconsumed_in_one() -> None:
    for consumer in range(-2, 12):
        for low in range(0, 10):
            for high in range(low, 11):
                messages, at = queue_behind(consumer, low, high)
                assert messages == behind(consumer, high)
                oldest = oldest_unconsumed(consumer, low, high)
                assert at == (-1 if oldest is None else oldest), (consumer, low, high)
