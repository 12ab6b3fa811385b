"""The official RocketMQ 5 Python SDK's SimpleConsumer (unmodified) receives through mqproxy
what our 4.x producer sent (pop consumption in the broker): tags, keys and properties intact,
acks, a changed invisible time and redelivery, and the SDK's sends received by it too."""

from __future__ import annotations

import pytest
import trio

from client.admin import AdminClient
from client.errors import MQClientError
from client.message import Message
from client.producer import Producer
from remoting.body import ConsumeType
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.harness import ProcessPool
from tests.integration.proxy.proxykit import (
    create_topic,
    run_sdk,
    start_group_at_zero,
    start_proxy,
)
from tests.kits.brokerkit import call
from tests.kits.hakit import wait_until
from tests.kits.popkit import pop_request

QUEUES = 4


def endpoints(proxy) -> str:
    return f"127.0.0.1:{proxy.port}"


async def test_simple_consumer_receives_what_a_4x_producer_sent(proxy_cluster) -> None:
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "PopFrom4x", QUEUES)
    await start_group_at_zero(broker, "Sdk5CG1", "PopFrom4x")
    async with Producer.open(ns.addr, "PG4x") as producer:
        sent = []
        for i in range(6):
            msg = Message(
                "PopFrom4x", f"m{i}".encode(), tags=f"T{i % 2}", keys=[f"key{i}", "common"]
            )
            msg.properties["origin"] = "4.x"
            sent.append((await producer.send(msg)).msg_id)
    lines = await run_sdk(
        {
            "op": "consume",
            "endpoints": endpoints(proxy),
            "group": "Sdk5CG1",
            "topic": "PopFrom4x",
            "count": 6,
        }
    )
    received = [line["received"] for line in lines if "received" in line]
    acked = {line["acked"] for line in lines if "acked" in line}
    assert sorted(r["message_id"] for r in received) == sorted(sent)  # each once
    assert acked == set(sent)
    for r in received:
        i = int(r["body"][1:])
        assert r["topic"] == "PopFrom4x" and r["tag"] == f"T{i % 2}"
        assert r["keys"] == sorted([f"key{i}", "common"])
        assert r["properties"]["origin"] == "4.x"
        assert r["attempt"] == 1
    # acked: nothing is left for the group (asked of the broker directly: through the proxy an
    # empty receive waits its 5 s minimum of long polling)
    async with RemotingClient.open() as client:
        response = await call(client, broker.addr, pop_request("PopFrom4x", "Sdk5CG1", poll_ms=300))
    assert response.code == ResponseCode.POLLING_TIMEOUT


async def test_changed_invisible_time_brings_the_message_back(proxy_cluster) -> None:
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "PopRedeliver", QUEUES)
    await start_group_at_zero(broker, "Sdk5CG2", "PopRedeliver")
    sent = await run_sdk(
        {
            "op": "send",
            "endpoints": endpoints(proxy),
            "topic": "PopRedeliver",
            "mode": "sync",
            "messages": [{"body": "again", "tag": "R", "properties": {"p": "1"}}],
        }
    )
    lines = await run_sdk(
        {
            "op": "consume",
            "endpoints": endpoints(proxy),
            "group": "Sdk5CG2",
            "topic": "PopRedeliver",
            "count": 1,
            "change_invisible_s": 1,
            "deadline_s": 60,
        }
    )
    received = [line["received"] for line in lines if "received" in line]
    assert [r["attempt"] for r in received] == [1, 2]
    assert {r["message_id"] for r in received} == {sent[0]["message_id"]}
    assert received[1]["topic"] == "PopRedeliver" and received[1]["properties"]["p"] == "1"
    assert [line["acked"] for line in lines if "acked" in line] == [sent[0]["message_id"]]


async def test_push_consumer_consumes_each_message_once(proxy_cluster) -> None:
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "PushT", QUEUES)
    await start_group_at_zero(broker, "Sdk5PushCG", "PushT")
    async with Producer.open(ns.addr, "PG4xPush") as producer:
        sent = [
            (await producer.send(Message("PushT", f"p{i}".encode(), tags="P"))).msg_id
            for i in range(10)
        ]
    lines = await run_sdk(
        {
            "op": "push",
            "endpoints": endpoints(proxy),
            "group": "Sdk5PushCG",
            "topic": "PushT",
            "count": 10,
            "linger_s": 1,
        }
    )
    received = [line["received"] for line in lines if "received" in line]
    assert sorted(r["message_id"] for r in received) == sorted(sent)
    assert {r["tag"] for r in received} == {"P"}


async def test_a_failed_push_listener_gets_the_message_again_then_it_is_acked(
    proxy_cluster,
) -> None:
    """The listener fails each message's first delivery: the SDK makes it visible again after
    the first delay of the group's retry policy (5.x's default: 1 s), it comes back with its
    attempt raised, and once consumed it is acked (nothing left for the group)."""
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "PushRetry", QUEUES)
    await start_group_at_zero(broker, "PushRetryCG", "PushRetry")
    async with Producer.open(ns.addr, "PG4xRetry") as producer:
        sent = [
            (await producer.send(Message("PushRetry", f"r{i}".encode(), keys=[f"k{i}"]))).msg_id
            for i in range(3)
        ]
    lines = await run_sdk(
        {
            "op": "push",
            "endpoints": endpoints(proxy),
            "group": "PushRetryCG",
            "topic": "PushRetry",
            "count": 3,
            "fail_first": True,
            "linger_s": 1,
        }
    )
    received = [line["received"] for line in lines if "received" in line]
    for message_id in sent:
        mine = [r for r in received if r["message_id"] == message_id]
        assert [r["attempt"] for r in mine] == [1, 2], mine
        assert mine[0]["body"] == mine[1]["body"] and mine[0]["keys"] == mine[1]["keys"]
    assert len(received) == 6
    async with RemotingClient.open() as client:  # acked: nothing left for the group
        response = await call(
            client, broker.addr, pop_request("PushRetry", "PushRetryCG", poll_ms=300)
        )
    assert response.code == ResponseCode.POLLING_TIMEOUT


@pytest.mark.slow
async def test_a_slow_push_listener_keeps_its_message(proxy_cluster, tmp_path) -> None:
    """The listener takes 25 s; the message's invisible time is 10 s: the proxy renews its
    receipt handle meanwhile, so it is delivered once and the ack lands (~35 s)."""
    ns, broker, _ = proxy_cluster
    pool = ProcessPool(tmp_path / "logs")
    try:
        proxy = start_proxy(
            pool,
            tmp_path,
            ns.addr,
            defaultInvisibleTimeMills=10_000,
            renewAheadTimeMillis=4_000,
            renewSchedulePeriodMillis=500,
        )
        await create_topic(ns.addr, "SlowPush", QUEUES)
        await start_group_at_zero(broker, "SlowPushCG", "SlowPush")
        async with Producer.open(ns.addr, "PG4xSlow") as producer:
            sent = (await producer.send(Message("SlowPush", b"slow"))).msg_id
        lines = await run_sdk(
            {
                "op": "push",
                "endpoints": endpoints(proxy),
                "group": "SlowPushCG",
                "topic": "SlowPush",
                "count": 1,
                "consume_s": 25,
                "linger_s": 3,
            }
        )
    finally:
        pool.stop_all()
    received = [line["received"] for line in lines if "received" in line]
    assert [r["message_id"] for r in received] == [sent]
    async with RemotingClient.open() as client:  # acked: nothing left for the group
        response = await call(
            client, broker.addr, pop_request("SlowPush", "SlowPushCG", poll_ms=300)
        )
    assert response.code == ResponseCode.POLLING_TIMEOUT


async def test_a_5x_consumer_group_is_seen_by_the_broker_while_it_runs(proxy_cluster) -> None:
    """The proxy heartbeats a SimpleConsumer's group to the brokers (CONSUME_POP, its
    subscription), as RocketMQ's Proxy does, and unregisters it when its client leaves."""
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "SeenT", QUEUES)
    job = {
        "op": "consume",
        "endpoints": endpoints(proxy),
        "group": "SeenCG",
        "topic": "SeenT",
        "filter": "TagA || TagB",
        "count": 1,
        "deadline_s": 2,
    }

    async def connection():
        async with AdminClient.open(ns.addr) as admin:
            try:
                return await admin.consumer_connection("SeenCG", broker.addr)
            except MQClientError:
                return None

    async def registered() -> bool:
        found = await connection()
        return found is not None and bool(found.connection_set)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_sdk, job)
        await wait_until(registered, 30, "the 5.x group registered at the broker")
        found = await connection()
        assert found.consume_type == ConsumeType.CONSUME_POP
        [sub] = found.subscription_table.values()
        assert (sub.topic, sub.tags_set) == ("SeenT", {"TagA", "TagB"})

    async def gone() -> bool:
        return not await registered()

    await wait_until(gone, 30, "the group unregistered after its client left")
