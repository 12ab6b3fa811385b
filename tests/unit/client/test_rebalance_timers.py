"""The push consumer's rebalance timers on trio's MockClock (autojump): the 20 s interval, a
broker's notify cutting it short, the retry 0.5 s after a lock was refused, and the wait of at
most 1 s for an orderly consumer's message in hand before its queue is unlocked."""

from __future__ import annotations

import trio

from client.process_queue import ProcessQueue
from client.rebalance import (
    REBALANCE_INTERVAL_S,
    RELOCK_REBALANCE_S,
    UNLOCK_WAIT_S,
    RebalanceImpl,
    _finished,
)


class Rebalancer(RebalanceImpl):
    """The loop's half of PushConsumer: records when each rebalance ran."""

    def __init__(self) -> None:
        self._rebalance_now = trio.Event()
        self.ran_at: list[float] = []

    async def rebalance(self) -> None:
        self.ran_at.append(trio.current_time())


async def test_rebalance_runs_every_interval(autojump_clock) -> None:
    consumer, start = Rebalancer(), trio.current_time()
    with trio.move_on_after(3 * REBALANCE_INTERVAL_S + 1):
        await consumer._rebalance_loop()
    assert [t - start for t in consumer.ran_at] == [20.0, 40.0, 60.0]
    assert REBALANCE_INTERVAL_S == 20.0  # Java's rebalanceService waits 20 s too


async def test_a_notify_rebalances_at_once_and_restarts_the_interval(autojump_clock) -> None:
    consumer, start = Rebalancer(), trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer._rebalance_loop)
        await trio.sleep(5)
        consumer._rebalance_now.set()  # NOTIFY_CONSUMER_IDS_CHANGED from the broker
        await trio.sleep(REBALANCE_INTERVAL_S + 1)
        nursery.cancel_scope.cancel()
    assert [t - start for t in consumer.ran_at] == [5.0, 25.0]


async def test_a_refused_lock_is_retried_soon_not_at_the_next_interval(autojump_clock) -> None:
    consumer, start = Rebalancer(), trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer._rebalance_loop)
        await trio.sleep(2)
        nursery.start_soon(consumer._rebalance_later, RELOCK_REBALANCE_S)
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert [t - start for t in consumer.ran_at] == [2.5]


async def consuming(pq: ProcessQueue, seconds: float, *, task_status=trio.TASK_STATUS_IGNORED):
    """An orderly consumer with a message in hand for ``seconds``."""
    async with pq.consume_lock:
        task_status.started()
        await trio.sleep(seconds)


async def test_a_leaving_orderly_queue_waits_for_its_message_in_hand(autojump_clock) -> None:
    pq = ProcessQueue()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        await nursery.start(consuming, pq, 0.3)
        assert await _finished(pq)
    assert trio.current_time() - start == 0.3


async def test_a_message_in_hand_that_takes_too_long_keeps_the_lock(autojump_clock) -> None:
    pq = ProcessQueue()
    async with trio.open_nursery() as nursery:
        await nursery.start(consuming, pq, 60)
        start = trio.current_time()
        assert not await _finished(pq)  # the queue stays locked at the broker until it lapses
        assert trio.current_time() - start == UNLOCK_WAIT_S
        nursery.cancel_scope.cancel()


async def test_an_orderly_queue_is_ours_for_30_s_after_each_lock(autojump_clock) -> None:
    pq = ProcessQueue()
    assert not pq.lock_valid()
    pq.relocked(True)
    await trio.sleep(20)
    assert pq.lock_valid()
    pq.relocked(True)  # the 20 s renewal (Java's lockMQPeriodically)
    await trio.sleep(29.9)
    assert pq.lock_valid()
    await trio.sleep(0.1)
    assert not pq.lock_valid()  # 30 s, below the broker's 60 s: never two owners
