"""PullRequestHoldService on trio's MockClock (autojump): when a held pull answers, in
virtual seconds, without waiting for them."""

from __future__ import annotations

import trio

from broker.long_polling import PullRequestHoldService
from broker.store.types import TagsFilter


class Queue:
    """One queue's max offset, which a test moves as the store would."""

    def __init__(self) -> None:
        self.max_offset = 0

    def __call__(self, topic: str, queue_id: int) -> int:
        return self.max_offset


async def held_until(service: PullRequestHoldService, timeout_s: float, **kwargs) -> float:
    start = trio.current_time()
    await service.hold(
        kwargs.get("topic", "T"), 0, kwargs.get("offset", 0), kwargs.get("tags"), timeout_s
    )
    return trio.current_time() - start


async def test_a_pull_nothing_answers_returns_at_its_suspend_timeout(autojump_clock) -> None:
    service = PullRequestHoldService(Queue())
    assert await held_until(service, 15.0) == 15.0
    assert service.held == 0  # the waiter is gone with it


async def test_a_message_past_the_offset_answers_at_once(autojump_clock) -> None:
    queue = Queue()
    service = PullRequestHoldService(queue)
    waited: list[float] = []

    async def pull() -> None:
        waited.append(await held_until(service, 30.0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pull)
        await trio.sleep(3)
        assert service.held == 1
        queue.max_offset = 1
        service.notify_message_arriving("T", 0, max_offset=1)
    assert waited == [3.0]


async def test_messages_the_pull_would_not_get_leave_it_waiting(autojump_clock) -> None:
    queue = Queue()
    service = PullRequestHoldService(queue)
    waited: list[float] = []

    async def pull() -> None:
        waited.append(await held_until(service, 30.0, offset=5, tags=TagsFilter(frozenset({7}))))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pull)
        await trio.sleep(1)
        service.notify_message_arriving("T", 0, max_offset=5)  # not past offset 5
        service.notify_message_arriving("T", 0, max_offset=6, tags_code=8)  # another tag
        service.notify_message_arriving("Other", 0, max_offset=9)
        await trio.sleep(1)
        assert service.held == 1
        service.notify_message_arriving("T", 0, max_offset=7, tags_code=7)
    assert waited == [2.0]


async def test_without_a_notify_a_held_pull_sees_new_data_at_its_next_check(
    autojump_clock,
) -> None:
    # A slave's dispatch does not notify (as in Java): the hold re-checks every 5 s.
    queue = Queue()
    service = PullRequestHoldService(queue, check_interval_s=5.0)
    waited: list[float] = []

    async def pull() -> None:
        waited.append(await held_until(service, 30.0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pull)
        await trio.sleep(7)
        queue.max_offset = 1
    assert waited == [10.0]


async def test_data_already_there_answers_without_holding(autojump_clock) -> None:
    queue = Queue()
    queue.max_offset = 3
    service = PullRequestHoldService(queue)
    assert await held_until(service, 30.0, offset=2) == 0.0
    assert service.held == 0


async def test_shutdown_answers_every_held_pull(autojump_clock) -> None:
    service = PullRequestHoldService(Queue())
    waited: list[float] = []

    async def pull(topic: str) -> None:
        waited.append(await held_until(service, 30.0, topic=topic))

    async with trio.open_nursery() as nursery:
        for topic in ("A", "B", "B"):
            nursery.start_soon(pull, topic)
        await trio.sleep(4)
        assert service.held == 3
        service.wake_all()
    assert waited == [4.0, 4.0, 4.0] and service.held == 0
