"""The admin client's message calls the console uses (client/admin_messages.py), against a
real NameServer and broker: the store time at a queue offset, a topic's messages in a time
range, and a dead letter resent to its group."""

from __future__ import annotations

import trio

from client.admin import AdminClient
from client.consumer import ConsumeStatus, PushConsumer
from client.errors import MQClientError
from client.message import Message
from client.producer import Producer
from remoting import constants as K
from remoting.body import ConsumeFromWhere, MessageQueue, TopicConfig
from remoting.message import MessageConst
from tests.console.consolekit import start_cluster


async def make_topic(admin: AdminClient, topic: str, queues: int = 1) -> None:
    config = TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
    await admin.create_topic_in_cluster("TestCluster", config)
    with trio.fail_after(20):
        while True:
            try:
                await admin.topic_route(topic)
                return
            except MQClientError:
                await trio.sleep(0.1)


async def test_store_time_at_and_messages_by_time(processes, tmp_path) -> None:
    ns = start_cluster(processes, tmp_path).namesrv.addr
    async with AdminClient.open(ns) as admin:
        await make_topic(admin, "Timed")
        async with Producer.open(ns, "PG") as producer:
            for i in range(5):
                await producer.send(Message("Timed", b"x", keys=f"k{i}"))
        [k0] = await admin.query_by_key("Timed", "k0")
        everything, more = await admin.messages_by_time("Timed", 0, 2**62)
        assert [m.keys for m in everything] == [f"k{i}" for i in range(5)] and not more
        assert k0.store_timestamp == everything[0].store_timestamp
        mq = MessageQueue(topic="Timed", broker_name="broker-a", queue_id=0)
        for m in everything:
            assert await admin.store_time_at(mq, m.queue_offset) == m.store_timestamp
        assert await admin.store_time_at(mq, 5) is None  # nothing stored there yet
        first, last = everything[0].store_timestamp, everything[-1].store_timestamp
        two, more = await admin.messages_by_time("Timed", first, last, max_num=2)
        assert [m.keys for m in two] == ["k0", "k1"] and more
        before, more = await admin.messages_by_time("Timed", first - 60_000, first - 1)
        assert before == [] and not more


async def test_a_dead_letter_resent_is_consumed_again_by_its_group_under_its_topic(
    processes, tmp_path
) -> None:
    ns = start_cluster(processes, tmp_path).namesrv.addr
    failing = True
    delivered: list = []
    arrived = trio.Event()

    def listener(msgs):
        if failing:
            return ConsumeStatus.RECONSUME_LATER
        delivered.extend(msgs)
        arrived.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with AdminClient.open(ns) as admin:
        await make_topic(admin, "Doomed", queues=2)
        async with Producer.open(ns, "PG") as producer:
            sent = await producer.send(Message("Doomed", b"poison", keys="doomed"))
        async with PushConsumer.open(
            ns,
            "CG-doomed",
            listener,
            {"Doomed": "*"},
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            max_reconsume_times=1,
        ):
            dlq = K.dlq_topic("CG-doomed")
            with trio.fail_after(60):
                while True:
                    try:
                        dead, _ = await admin.messages_by_time(dlq, 0, 2**62)
                    except MQClientError:  # no route for the DLQ topic yet
                        dead = []
                    if dead:
                        break
                    await trio.sleep(0.2)
            failing = False
            result = await admin.resend_dead_letter(dead[0], "CG-doomed")
            assert result.message_queue.topic == K.retry_topic("CG-doomed")
            with trio.fail_after(60):
                await arrived.wait()
    [again] = delivered
    assert (again.topic, again.keys, again.body) == ("Doomed", "doomed", b"poison")
    assert again.reconsume_times == 0
    assert again.properties[MessageConst.ORIGIN_MESSAGE_ID] in (sent.msg_id, sent.offset_msg_id)
