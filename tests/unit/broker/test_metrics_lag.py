"""Lag in messages and time (metrics/lag.py, as the broker uses it) and a broadcasting client's position
(broker/metrics/client_probe.py): pure figures from offsets and store times."""

from __future__ import annotations

from broker.metrics.client_probe import client_offset
from metrics.lag import NO_LAG, Lag, queue_lag, total_lag
from remoting.body import ProcessQueueInfo

STORE_MS = {offset: 1_000 + offset for offset in range(100)}


def test_a_group_behind_is_aged_by_its_oldest_unconsumed_message() -> None:
    lag = queue_lag(40, 0, 50, STORE_MS.__getitem__)
    assert lag == Lag(10, 1_040)
    assert lag.latency_ms(now_ms=2_040) == 1_000


def test_a_group_at_the_end_or_without_an_offset_has_no_lag() -> None:
    assert queue_lag(50, 0, 50, STORE_MS.__getitem__) == NO_LAG
    assert queue_lag(-1, 0, 50, STORE_MS.__getitem__) == NO_LAG
    assert NO_LAG.latency_ms(now_ms=10**12) == 0


def test_an_offset_below_the_first_message_counts_from_it() -> None:
    # messages 0..29 expired: behind by all 50 offsets, the oldest still there is 30's
    lag = queue_lag(0, 30, 50, STORE_MS.__getitem__)
    assert lag == Lag(50, 1_030)


def test_an_unreadable_store_time_gives_messages_but_no_age() -> None:
    lag = queue_lag(10, 0, 20, lambda at: -1)
    assert lag == Lag(10, 0) and lag.latency_ms(now_ms=5_000) == 0


def test_queues_merge_into_the_sum_and_the_oldest() -> None:
    merged = Lag(3, 2_000).merge(Lag(4, 1_500)).merge(Lag(5, 0))
    assert merged == Lag(12, 1_500)
    assert total_lag([Lag(3, 2_000), Lag(4, 1_500), Lag(5, 0)]) == merged
    assert total_lag([]) == NO_LAG
    assert total_lag([Lag(2, 0)]) == Lag(2, 0)


def test_a_broadcast_client_before_its_first_commit_is_at_its_first_held_message() -> None:
    assert client_offset(ProcessQueueInfo(commit_offset=7, cached_msg_count=3)) == 7
    held = ProcessQueueInfo(commit_offset=-1, cached_msg_min_offset=4, cached_msg_count=2)
    assert client_offset(held) == 4
    assert client_offset(ProcessQueueInfo(commit_offset=-1)) == -1
