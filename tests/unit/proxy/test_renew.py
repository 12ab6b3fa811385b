"""The renewer of PushConsumers' receipt handles on virtual time: renewed ahead of expiry with
RocketMQ's 1, 3, 5, 10, 30, 60 minute steps, let go after renewMaxTimeMillis with the retry
delay, dropped after repeated failures, given back soon when the client leaves; an ack acts on
the latest handle."""

from __future__ import annotations

import attrs
import trio

from proxy.consume import ReceiptHandle
from proxy.liveness import ClientLiveness
from proxy.renew import Held, Renewer, RenewPolicy
from remoting import pop_wire as ck_info

POLICY = RenewPolicy(period_ms=1_000, ahead_ms=10_000, max_ms=600_000, max_failures=3)


def handle(pop_time: int, invisible: int) -> ReceiptHandle:
    extra = ck_info.ExtraInfo(
        ck_queue_offset=0,
        pop_time=pop_time,
        invisible_time=invisible,
        revive_qid=0,
        retry=False,
        broker_name="broker-a",
        queue_id=0,
        queue_offset=0,
    )
    return ReceiptHandle(extra, 0)


class FakeBroker:
    def __init__(self, now) -> None:
        self.now = now
        self.changes: list[tuple[str, int]] = []
        self.failing = False

    async def change_invisible(self, group, topic, current, invisible_ms):
        if self.failing:
            raise OSError("broker gone")
        self.changes.append((current.extra.encode(), invisible_ms))
        return attrs.evolve(
            current,
            extra=attrs.evolve(current.extra, pop_time=self.now(), invisible_time=invisible_ms),
        )


def now_ms() -> int:
    return int(trio.current_time() * 1000)


async def start(renewer: Renewer, nursery: trio.Nursery, **held) -> Held:
    entry = Held(
        client=held.get("client", "c1"),
        group="G",
        topic="T",
        message_id=held.get("message_id", "M1"),
        handle=handle(now_ms(), 60_000),
        consumed_at_ms=now_ms(),
        reconsume_times=held.get("reconsume_times", 0),
    )
    await renewer.hold([entry])
    return entry


async def test_renewed_ahead_of_expiry_then_let_go(autojump_clock) -> None:
    broker = FakeBroker(now_ms)
    renewer = Renewer(broker.change_invisible, POLICY, clock=now_ms)
    async with trio.open_nursery() as nursery:
        await nursery.start(renewer.run)
        first = await start(renewer, nursery, reconsume_times=1)
        await trio.sleep(49)  # 60 s invisible, renewed within 10 s of its end
        assert broker.changes == []
        await trio.sleep(2)
        assert [ms for _, ms in broker.changes] == [60_000]
        await trio.sleep(60)
        assert [ms for _, ms in broker.changes] == [60_000, 180_000]
        latest = await renewer.take("G", "M1", first.handle)
        assert latest.extra.invisible_time == 180_000  # the client's stale handle is replaced
        assert len(renewer.held) == 0
        await start(renewer, nursery, message_id="M2", reconsume_times=1)
        broker.changes.clear()
        await trio.sleep(1200)  # due again past renewMaxTimeMillis: back with attempt 2's delay
        assert [ms for _, ms in broker.changes] == [60_000, 180_000, 300_000, 600_000, 30_000]
        assert len(renewer.held) == 0
        nursery.cancel_scope.cancel()


async def test_failures_and_a_leaving_client(autojump_clock) -> None:
    broker = FakeBroker(now_ms)
    renewer = Renewer(broker.change_invisible, POLICY, clock=now_ms)
    async with trio.open_nursery() as nursery:
        await nursery.start(renewer.run)
        await start(renewer, nursery, message_id="M1")
        broker.failing = True
        await trio.sleep(55)  # three failed renewals in a row: left to expire
        assert len(renewer.held) == 0
        broker.failing = False
        await start(renewer, nursery, message_id="M2", client="c2")
        await start(renewer, nursery, message_id="M3", client="c3")
        await renewer.client_left("c2")
        assert [ms for _, ms in broker.changes] == [1_000]  # invisibleTimeMillisWhenClear
        assert len(renewer.held) == 1
        nursery.cancel_scope.cancel()


async def test_a_client_gone_silent_is_told_to_leave(autojump_clock) -> None:
    left: list[str] = []

    async def leave(client: str) -> None:
        left.append(client)

    liveness = ClientLiveness(120_000, [leave], clock=now_ms)
    async with trio.open_nursery() as nursery:
        await nursery.start(liveness.run)
        await liveness.seen("quiet")
        await liveness.seen("chatty")
        for _ in range(13):  # heartbeats every 10 s from one of them
            await trio.sleep(10)
            await liveness.seen("chatty")
        assert left == ["quiet"]
        await liveness.left("chatty")  # NotifyClientTermination
        await trio.sleep(300)
        assert left == ["quiet", "chatty"]
        nursery.cancel_scope.cancel()
