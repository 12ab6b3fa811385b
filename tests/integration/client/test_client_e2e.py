"""Our Python client against real mqnamesrv + mqbroker processes."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
import trio

from client.admin import AdminClient
from client.consumer import ConsumeStatus, PushConsumer
from client.errors import MQClientError
from client.message import Message, SendStatus
from client.producer import Producer
from remoting.body import MessageModel, TopicConfig
from remoting.client import RemotingClient
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv, wait_for_route


class Inbox:
    """Collects deliveries; ``wait_for(n)`` returns once n distinct keys arrived."""

    def __init__(self) -> None:
        self.keys: Counter[str] = Counter()
        self.by_queue: dict[int, list[str]] = defaultdict(list)
        self.changed = trio.Event()

    def add(self, msgs) -> ConsumeStatus:
        for msg in msgs:
            self.keys[msg.keys] += 1
            self.by_queue[msg.queue_id].append(msg.keys)
        self.changed.set()
        self.changed = trio.Event()
        return ConsumeStatus.CONSUME_SUCCESS

    async def wait_for(self, n: int, timeout_s: float = 60) -> None:
        with trio.fail_after(timeout_s):
            while len(self.keys) < n:
                await self.changed.wait()


async def test_sync_async_oneway_batch_sends_are_all_consumed_once(cluster) -> None:
    ns, _ = cluster
    inbox = Inbox()
    sent: list[str] = []
    async with Producer.open(ns.addr, "PG") as producer:
        for i in range(100):
            result = await producer.send(Message("Mixed", f"s{i}".encode(), tags="A", keys=f"s{i}"))
            assert result.status is SendStatus.SEND_OK and len(result.msg_id) == 32
            sent.append(f"s{i}")
        done = trio.Event()
        acked: list[str] = []

        def ok(result) -> None:
            acked.append(result.msg_id)
            if len(acked) == 50:
                done.set()

        for i in range(50):
            producer.send_async(Message("Mixed", b"a", tags="A", keys=f"a{i}"), ok)
            sent.append(f"a{i}")
        with trio.fail_after(30):
            await done.wait()
        for i in range(20):
            await producer.send_oneway(Message("Mixed", b"o", tags="A", keys=f"o{i}"))
            sent.append(f"o{i}")
        batch = await producer.send_batch(
            [Message("Mixed", b"b" * 10_000, tags="A", keys=f"b{i}") for i in range(30)]
        )
        assert len(batch.msg_id.split(",")) == 30
        sent += [f"b{i}" for i in range(30)]
        big = await producer.send(Message("Mixed", b"z" * 100_000, tags="A", keys="big"))
        assert big.status is SendStatus.SEND_OK
        sent.append("big")

    bodies: dict[str, bytes] = {}

    def record(msgs):
        for m in msgs:
            bodies[m.keys] = m.body
        return inbox.add(msgs)

    async with PushConsumer.open(
        ns.addr, "CG-mixed", record, {"Mixed": "A"}, consume_from_where=_first()
    ):
        await inbox.wait_for(len(sent))
    assert set(inbox.keys) == set(sent) and max(inbox.keys.values()) == 1
    assert bodies["big"] == b"z" * 100_000  # compressed on the wire, inflated for the listener


def _first():
    from remoting.body import ConsumeFromWhere

    return ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


async def test_a_client_error_reaches_the_caller_as_itself(cluster) -> None:
    """Not wrapped in the exception groups of the client's own nurseries."""
    ns, _ = cluster
    with pytest.raises(MQClientError, match="invalid topic"):
        async with Producer.open(ns.addr, "PG") as producer:
            await producer.send(Message("no spaces allowed", b"x"))
    with pytest.raises(MQClientError, match="subscribe to at least one topic"):
        async with PushConsumer.open(ns.addr, "CG-none", lambda msgs: None, {}):
            pass


async def test_tag_filter_and_unknown_topic_auto_created(cluster) -> None:
    ns, _ = cluster
    async with Producer.open(ns.addr, "PG") as producer:
        for i in range(20):
            await producer.send(Message("Tagged", b"x", tags="A" if i % 2 else "B", keys=f"k{i}"))
    inbox = Inbox()
    async with PushConsumer.open(
        ns.addr, "CG-tags", inbox.add, {"Tagged": "B"}, consume_from_where=_first()
    ):
        await inbox.wait_for(10)
    assert set(inbox.keys) == {f"k{i}" for i in range(0, 20, 2)}


async def test_three_consumers_share_queues_and_rebalance_when_one_leaves(cluster) -> None:
    ns, _ = cluster
    async with Producer.open(ns.addr, "PG", default_topic_queue_nums=8) as producer:
        for i in range(8):
            await producer.send(Message("Shared", b"warm", keys=f"w{i}"))
        inbox = Inbox()
        members = []
        async with trio.open_nursery() as nursery:
            stops = []
            for n in range(3):
                stop = trio.Event()
                stops.append(stop)

                async def member(n=n, stop=stop, task_status=trio.TASK_STATUS_IGNORED):
                    async with PushConsumer.open(
                        ns.addr,
                        "CG-shared",
                        inbox.add,
                        {"Shared": "*"},
                        instance_name=f"member{n}",
                        consume_from_where=_first(),
                    ) as consumer:
                        members.append(consumer)
                        task_status.started()
                        await stop.wait()

                await nursery.start(member)

            async def split() -> list[int]:
                return sorted(len([mq for mq in c.queues if mq.topic == "Shared"]) for c in members)

            with trio.fail_after(45):
                while await split() != [2, 3, 3]:
                    for c in members:
                        c._rebalance_now.set()
                    await trio.sleep(0.2)
            stops[0].set()
            with trio.fail_after(45):
                while sorted(
                    len([q for q in c.queues if q.topic == "Shared"]) for c in members[1:]
                ) != [4, 4]:
                    await trio.sleep(0.2)
            for i in range(200):
                await producer.send(Message("Shared", b"m", keys=f"m{i}"))
            await inbox.wait_for(208)
            for stop in stops[1:]:
                stop.set()
    assert {f"m{i}" for i in range(200)} <= set(inbox.keys)


async def test_broadcasting_delivers_every_message_to_every_member(cluster, tmp_path) -> None:
    ns, _ = cluster
    async with Producer.open(ns.addr, "PG") as producer:
        await producer.send(Message("Bcast", b"warm", keys="warm"))
        inboxes = [Inbox(), Inbox()]
        async with (
            PushConsumer.open(
                ns.addr,
                "CG-b",
                inboxes[0].add,
                {"Bcast": "*"},
                instance_name="b0",
                message_model=MessageModel.BROADCASTING,
                consume_from_where=_first(),
                offset_dir=tmp_path / "off0",
            ),
            PushConsumer.open(
                ns.addr,
                "CG-b",
                inboxes[1].add,
                {"Bcast": "*"},
                instance_name="b1",
                message_model=MessageModel.BROADCASTING,
                consume_from_where=_first(),
                offset_dir=tmp_path / "off1",
            ),
        ):
            for i in range(50):
                await producer.send(Message("Bcast", b"m", keys=f"m{i}"))
            for inbox in inboxes:
                await inbox.wait_for(51)
    for inbox in inboxes:
        assert {f"m{i}" for i in range(50)} <= set(inbox.keys)


async def test_orderly_keeps_per_key_order(cluster) -> None:
    ns, _ = cluster
    async with Producer.open(ns.addr, "PG") as producer:
        for i in range(300):
            key = f"order{i % 5}"
            await producer.send_orderly(Message("Ordered", f"{i}".encode(), keys=f"{key}:{i}"), key)
    seen: dict[str, list[int]] = defaultdict(list)
    inbox = Inbox()

    async def listener(msgs):
        for m in msgs:
            key, i = m.keys.split(":")
            seen[key].append(int(i))
        await trio.sleep(0)
        return inbox.add(msgs) and ConsumeStatus.SUCCESS

    async with PushConsumer.open(
        ns.addr, "CG-order", listener, {"Ordered": "*"}, orderly=True, consume_from_where=_first()
    ):
        await inbox.wait_for(300)
    for key, values in seen.items():
        assert values == sorted(values), key


async def test_an_orderly_queue_changes_hands_only_after_the_message_in_hand(cluster) -> None:
    """A joining consumer takes the only queue; the one losing it finishes the message it is
    in the middle of before unlocking, and the newcomer starts where it committed."""
    ns, broker = cluster
    async with AdminClient.open(ns.addr) as admin:
        await admin.create_topic(
            broker.addr, TopicConfig(topic_name="Handover", read_queue_nums=1, write_queue_nums=1)
        )
    async with Producer.open(ns.addr, "PG") as producer:
        for i in range(6):
            await producer.send(Message("Handover", b"x", keys=f"h{i}"))
    runs: list[tuple[str, int, float, float | None]] = []
    started = trio.Event()
    done = trio.Event()

    def listener_of(name: str):
        async def listener(msgs):
            entry = [name, msgs[0].queue_offset, trio.current_time(), None]
            runs.append(entry)
            started.set()
            await trio.sleep(0.3)
            entry[3] = trio.current_time()
            if name == "new" and msgs[0].queue_offset == 5:
                done.set()
            return ConsumeStatus.SUCCESS

        return listener

    def consumer(name: str, instance: str):
        # client ids sort by instance name: "a-new" takes the queue from "b-old"
        return PushConsumer.open(
            ns.addr,
            "CG-handover",
            listener_of(name),
            {"Handover": "*"},
            orderly=True,
            consume_from_where=_first(),
            instance_name=instance,
        )

    async with consumer("old", "b-old"):
        await started.wait()
        async with consumer("new", "a-new"):
            with trio.fail_after(30):
                await done.wait()
    assert all(end is not None for name, _, _, end in runs if name == "old"), runs
    old = [r for r in runs if r[0] == "old"]
    new = [r for r in runs if r[0] == "new"]
    assert new[0][2] >= old[-1][3]  # no overlap
    assert new[0][1] <= old[-1][1] + 1  # no gap
    assert [r[1] for r in new] == list(range(new[0][1], 6))


async def test_reconsume_later_redelivers_through_the_retry_topic(cluster) -> None:
    ns, _ = cluster
    async with Producer.open(ns.addr, "PG") as producer:
        for i in range(10):
            await producer.send(Message("Flaky", b"x", keys=f"f{i}"))
    attempts: Counter[str] = Counter()
    inbox = Inbox()

    def listener(msgs):
        for m in msgs:
            attempts[m.keys] += 1
            if attempts[m.keys] == 1:
                return ConsumeStatus.RECONSUME_LATER
            assert m.topic == "Flaky" and m.reconsume_times == 1
        return inbox.add(msgs)

    async with PushConsumer.open(
        ns.addr, "CG-flaky", listener, {"Flaky": "*"}, consume_from_where=_first()
    ):
        await inbox.wait_for(10)
    assert all(v == 2 for v in attempts.values())


async def test_offsets_resume_after_a_consumer_restart(cluster) -> None:
    ns, _ = cluster
    async with Producer.open(ns.addr, "PG") as producer:
        for i in range(50):
            await producer.send(Message("Resume", b"x", keys=f"first{i}"))
        inbox = Inbox()
        async with PushConsumer.open(
            ns.addr, "CG-resume", inbox.add, {"Resume": "*"}, consume_from_where=_first()
        ):
            await inbox.wait_for(50)
        for i in range(30):
            await producer.send(Message("Resume", b"x", keys=f"second{i}"))
    again = Inbox()
    async with PushConsumer.open(ns.addr, "CG-resume", again.add, {"Resume": "*"}):
        await again.wait_for(30)
        await trio.sleep(0.5)  # a grace period in which a wrongly rewound offset would show
    assert set(again.keys) == {f"second{i}" for i in range(30)}


async def test_producer_moves_to_the_other_master_when_one_is_killed(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    a = start_broker(processes, broker_conf(tmp_path, "broker-a", namesrvAddr=ns.addr))
    start_broker(processes, broker_conf(tmp_path, "broker-b", namesrvAddr=ns.addr), "broker-b")
    async with AdminClient.open(ns.addr) as admin:
        created = await admin.create_topic_in_cluster(
            "TestCluster",
            TopicConfig(topic_name="TwoMasters", read_queue_nums=4, write_queue_nums=4),
        )
        assert len(created) == 2
    async with RemotingClient.open() as client:
        # Each broker registers the new topic after its reply: a producer that looked it up
        # before the second one did would only ever know the first.
        await wait_for_route(client, ns.addr, "TwoMasters", lambda r: r and len(r.queue_datas) == 2)
    async with Producer.open(ns.addr, "PG", send_msg_timeout_ms=1000) as producer:
        brokers = set()
        for _ in range(40):
            brokers.add(
                (await producer.send(Message("TwoMasters", b"x"))).message_queue.broker_name
            )
        assert brokers == {"broker-a", "broker-b"}
        a.kill()
        results = [await producer.send(Message("TwoMasters", b"y")) for _ in range(20)]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert {r.message_queue.broker_name for r in results[5:]} == {"broker-b"}


async def test_lite_pull_consumer_assign_poll_seek_commit(cluster) -> None:
    from client.lite_pull import LitePullConsumer

    ns, _ = cluster
    async with Producer.open(ns.addr, "PG") as producer:
        for i in range(40):
            await producer.send(Message("Lite", b"x", keys=f"l{i}"))
    async with LitePullConsumer.open(ns.addr, "CG-lite") as consumer:
        mqs = await consumer.fetch_queues("Lite")
        await consumer.assign(mqs)
        got: list[str] = []
        with trio.fail_after(30):
            while len(got) < 40:
                got += [m.keys for m in await consumer.poll(timeout_s=1)]
        assert sorted(got) == sorted(f"l{i}" for i in range(40))
        target = next(mq for mq in mqs if consumer.positions[mq] > 1)
        end = consumer.positions[target]
        await consumer.seek(target, 1)
        again: list = []
        with trio.fail_after(30):
            while consumer.positions[target] < end:
                again += await consumer.poll(timeout_s=1)
        assert sorted(m.queue_offset for m in again) == list(range(1, end))
        await consumer.commit()
    async with LitePullConsumer.open(ns.addr, "CG-lite") as consumer:
        await consumer.assign(mqs)
        assert await consumer.poll(timeout_s=1) == []  # everything committed


def test_synchronous_facade_for_scripts(cluster) -> None:
    import threading

    from client.sync import SyncProducer, SyncPushConsumer

    ns, _ = cluster
    with SyncProducer(ns.addr, "PG-sync") as producer:
        results = [producer.send(Message("Scripted", b"x", keys=f"k{i}")) for i in range(10)]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    seen: set[str] = set()
    done = threading.Event()

    def listener(msgs):
        seen.update(m.keys for m in msgs)
        if len(seen) == 10:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    with SyncPushConsumer(
        ns.addr, "CG-sync", listener, {"Scripted": "*"}, consume_from_where=_first()
    ):
        assert done.wait(30)
    assert seen == {f"k{i}" for i in range(10)}


async def test_message_failing_too_often_lands_in_the_dead_letter_queue(cluster) -> None:
    from client.admin import AdminClient
    from client.errors import MQClientError

    ns, _ = cluster
    async with Producer.open(ns.addr, "PG") as producer:
        await producer.send(Message("Doomed", b"x", keys="doomed"))
    attempts: Counter[str] = Counter()
    done = trio.Event()

    def listener(msgs):
        for m in msgs:
            attempts[m.keys] += 1
            if attempts[m.keys] == 3:  # first delivery + 2 retries = maxReconsumeTimes reached
                done.set()
        return ConsumeStatus.RECONSUME_LATER

    async with PushConsumer.open(
        ns.addr,
        "CG-doomed",
        listener,
        {"Doomed": "*"},
        consume_from_where=_first(),
        max_reconsume_times=2,
    ):
        with trio.fail_after(60):
            await done.wait()
        async with AdminClient.open(ns.addr) as admin:
            with trio.fail_after(30):
                while True:
                    try:
                        found = await admin.query_by_key("%DLQ%CG-doomed", "doomed")
                    except MQClientError:  # no route for the DLQ topic yet
                        found = []
                    if found:
                        break
                    await trio.sleep(0.2)
    assert found[0].keys == "doomed"
    assert attempts["doomed"] == 3
