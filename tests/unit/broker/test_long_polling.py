"""PullRequestHoldService on trio's MockClock (autojump): when a held pull is woken, in
virtual seconds, without waiting for them. A held pull is a record whose wake callback runs
once; one timer task serves every deadline."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from broker.long_polling import PullRequestHoldService
from broker.store.types import TagsFilter


class Queue:
    """One queue's max offset, which a test moves as the store would."""

    def __init__(self) -> None:
        self.max_offset = 0

    def __call__(self, topic: str, queue_id: int) -> int:
        return self.max_offset


@asynccontextmanager
async def running(service: PullRequestHoldService) -> AsyncIterator[None]:
    async with trio.open_nursery() as nursery:
        await nursery.start(service.run)
        yield
        nursery.cancel_scope.cancel()


class Woken:
    """When each pull's wake ran (virtual seconds since the test's start)."""

    def __init__(self) -> None:
        self.start = trio.current_time()
        self.at: dict[str, float] = {}

    def hold(
        self,
        service: PullRequestHoldService,
        name: str,
        timeout_s: float,
        *,
        topic: str = "T",
        offset: int = 0,
        tags: TagsFilter | None = None,
        owner: object = None,
    ) -> None:
        def wake() -> None:
            assert name not in self.at, "woken twice"
            self.at[name] = trio.current_time() - self.start

        deadline = trio.current_time() + timeout_s
        service.suspend(topic, 0, offset, tags, deadline, wake, owner)


async def test_a_pull_nothing_answers_is_woken_at_its_suspend_timeout(autojump_clock) -> None:
    service = PullRequestHoldService(Queue())
    woken = Woken()
    async with running(service):
        woken.hold(service, "a", 15.0)
        await trio.sleep(16)
    assert woken.at == {"a": 15.0}
    assert service.held == 0  # the record is gone with it


async def test_each_pull_is_woken_at_its_own_deadline(autojump_clock) -> None:
    service = PullRequestHoldService(Queue(), check_interval_s=100.0)
    woken = Woken()
    async with running(service):
        woken.hold(service, "late", 20.0)
        woken.hold(service, "early", 3.0)  # an earlier deadline moves the timer's
        await trio.sleep(1)
        woken.hold(service, "middle", 9.0)
        await trio.sleep(30)
    assert woken.at == {"early": 3.0, "middle": 10.0, "late": 20.0}


async def test_a_message_past_the_offset_wakes_it_at_once(autojump_clock) -> None:
    queue = Queue()
    service = PullRequestHoldService(queue)
    woken = Woken()
    async with running(service):
        woken.hold(service, "a", 30.0)
        await trio.sleep(3)
        assert service.held == 1
        queue.max_offset = 1
        service.notify_message_arriving("T", 0, max_offset=1)
        assert woken.at == {"a": 3.0}  # in the notify's own call, no task between
        await trio.sleep(40)
    assert woken.at == {"a": 3.0}  # its deadline does not wake it again
    assert service.held == 0


async def test_messages_the_pull_would_not_get_leave_it_held(autojump_clock) -> None:
    queue = Queue()
    service = PullRequestHoldService(queue)
    woken = Woken()
    async with running(service):
        woken.hold(service, "a", 30.0, offset=5, tags=TagsFilter(frozenset({7})))
        await trio.sleep(1)
        service.notify_message_arriving("T", 0, max_offset=5)  # not past offset 5
        service.notify_message_arriving("T", 0, max_offset=6, tags_code=8)  # another tag
        service.notify_message_arriving("Other", 0, max_offset=9)
        await trio.sleep(1)
        assert service.held == 1 and woken.at == {}
        service.notify_message_arriving("T", 0, max_offset=7, tags_code=7)
    assert woken.at == {"a": 2.0}


async def test_without_a_notify_a_held_pull_sees_new_data_at_the_next_check(
    autojump_clock,
) -> None:
    # A slave's dispatch does not notify (as in Java): the hold re-checks every 5 s.
    queue = Queue()
    service = PullRequestHoldService(queue, check_interval_s=5.0)
    woken = Woken()
    async with running(service):
        woken.hold(service, "a", 30.0)
        woken.hold(service, "b", 30.0, offset=3)
        await trio.sleep(7)
        queue.max_offset = 1
        await trio.sleep(20)
        assert woken.at == {"a": 10.0}  # "b" waits for offset 4
    assert service.held == 1


async def test_a_wake_may_hold_its_pull_again(autojump_clock) -> None:
    # A SQL92 filter refused what arrived: the wake holds the pull past it, same deadline.
    service = PullRequestHoldService(Queue())
    at: list[float] = []
    deadline = trio.current_time() + 30.0

    def wake() -> None:
        at.append(trio.current_time())
        if len(at) == 1:
            service.suspend("T", 0, 1, None, deadline, wake)

    async with running(service):
        service.suspend("T", 0, 0, None, deadline, wake)
        await trio.sleep(2)
        service.notify_message_arriving("T", 0, max_offset=1)
        assert service.held == 1
        await trio.sleep(40)
    assert at == [2.0, 30.0] and service.held == 0


async def test_a_closed_connections_pulls_are_dropped_unwoken(autojump_clock) -> None:
    service = PullRequestHoldService(Queue())
    woken = Woken()
    closed, open_ = object(), object()
    async with running(service):
        woken.hold(service, "a", 30.0, owner=closed)
        woken.hold(service, "b", 30.0, owner=open_)
        woken.hold(service, "c", 10.0, owner=closed, topic="U")
        service.drop(closed)
        assert service.held == 1
        service.notify_message_arriving("U", 0, max_offset=1)
        await trio.sleep(40)
    assert woken.at == {"b": 30.0}


async def test_a_connection_holds_only_its_live_pulls_in_the_owner_index(autojump_clock) -> None:
    # A consumer's connection holds, is woken by an arrival, times out and holds again for
    # hours: what drop() keeps per connection must not grow with it.
    service = PullRequestHoldService(Queue())
    consumer, other = object(), object()
    async with running(service):
        for offset in range(5_000):
            service.suspend(
                "T", 0, offset, None, trio.current_time() + 30.0, lambda: None, consumer
            )
            service.notify_message_arriving("T", 0, max_offset=offset + 1)
        service.suspend("U", 0, 0, None, trio.current_time() + 1.0, lambda: None, consumer)
        await trio.sleep(2)  # expired at its deadline
        service.suspend("U", 0, 0, None, trio.current_time() + 30.0, lambda: None, other)
        assert service.held == 1
        # one set per connection that held pulls, holding the live ones only
        assert {owner: len(pulls) for owner, pulls in service._owned.items()} == {
            id(consumer): 0,
            id(other): 1,
        }
        service.drop(consumer)  # nothing of its own is held: the other's pull stays
        assert service.held == 1
        service.drop(other)
        assert service.held == 0 and service._owned == {}


async def test_the_deadline_heap_stays_within_twice_the_held_pulls(autojump_clock) -> None:
    # Woken pulls leave their deadlines behind: a consumer polling for hours must not grow it.
    service = PullRequestHoldService(Queue())
    async with running(service):
        for offset in range(10_000):
            service.suspend("T", 0, offset, None, trio.current_time() + 30.0, lambda: None)
            service.notify_message_arriving("T", 0, max_offset=offset + 1)
        assert service.held == 0
        assert len(service._deadlines) <= 2 * 64 + 2


async def test_shutdown_wakes_every_held_pull(autojump_clock) -> None:
    service = PullRequestHoldService(Queue())
    woken = Woken()
    async with running(service):
        for name, topic in (("a", "A"), ("b", "B"), ("c", "B")):
            woken.hold(service, name, 30.0, topic=topic)
        await trio.sleep(4)
        assert service.held == 3
        service.wake_all()
    assert woken.at == {"a": 4.0, "b": 4.0, "c": 4.0} and service.held == 0


async def test_the_check_interval_is_read_at_each_check(autojump_clock) -> None:
    # The broker's follows longPollingEnable (5 s, else shortPollingTimeMills), updatable live.
    queue = Queue()
    interval = [2.0]
    service = PullRequestHoldService(queue, check_interval_s=lambda: interval[0])
    woken = Woken()
    async with running(service):
        woken.hold(service, "a", 30.0)
        queue.max_offset = 1
        await trio.sleep(5)
        interval[0] = 7.0
        woken.hold(service, "b", 30.0, offset=1)
        await trio.sleep(1)
        queue.max_offset = 2
        await trio.sleep(20)
    assert woken.at == {"a": 2.0, "b": 12.0}


async def test_a_wake_that_raises_leaves_the_others_woken(autojump_clock) -> None:
    # A bug in one pull's answer must not reach the store's dispatch nor stop the timer.
    service = PullRequestHoldService(Queue())
    woken = Woken()

    def broken() -> None:
        raise RuntimeError("bug")

    async with running(service):
        deadline = trio.current_time() + 5.0
        service.suspend("T", 0, 0, None, deadline, broken)
        woken.hold(service, "a", 30.0)
        service.notify_message_arriving("T", 0, max_offset=1)
        service.suspend("T", 0, 1, None, deadline, broken)
        woken.hold(service, "b", 10.0, offset=1)
        await trio.sleep(20)
    assert woken.at == {"a": 0.0, "b": 10.0} and service.held == 0
