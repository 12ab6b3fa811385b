"""FIFO consumption through mqproxy, as RocketMQ 5's Proxy serves it: a subscription group
created with consumeMessageOrderly (mqadmin updateSubGroup -o true) is told it is FIFO in the
settings the proxy sends (the SDK's PushConsumer then consumes a message group one message at
a time), and its receives pop orderly (the next message of a queue is not delivered before the
previous one is acked)."""

from __future__ import annotations

import itertools

import trio
from google.protobuf import duration_pb2

from client.admin import AdminClient
from client.message import Message
from client.producer import Producer
from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from remoting.body import SubscriptionGroupConfig
from remoting.client import RemotingClient
from tests.integration.proxy.proxykit import (
    CLUSTER,
    METADATA,
    create_topic,
    in_thread,
    run_sdk,
    start_group_at_zero,
    stub,
)
from tests.integration.proxy.test_consumer_rpcs import receive, receive_request
from tests.kits.brokerkit import pull_all
from tests.kits.clikit import run_cli
from tests.kits.hakit import wait_until


def endpoints(proxy) -> str:
    return f"127.0.0.1:{proxy.port}"


async def orderly_group(ns, group: str, retry_max_times: int = 16) -> None:
    async with AdminClient.open(ns.addr) as admin:
        config = SubscriptionGroupConfig(
            group_name=group, consume_message_orderly=True, retry_max_times=retry_max_times
        )
        for addr in (await admin.masters(CLUSTER)).values():
            await admin.update_sub_group(addr, config)


def telemetry_settings(proxy, group: str) -> pb.Settings:
    """The settings the proxy answers a SimpleConsumer of ``group`` with (raw Telemetry)."""
    settings = pb.Settings(
        client_type=pb.ClientType.SIMPLE_CONSUMER,
        subscription=pb.Subscription(
            group=pb.Resource(name=group),
            subscriptions=[
                pb.SubscriptionEntry(
                    topic=pb.Resource(name="AnyTopic"),
                    expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
                )
            ],
        ),
    )
    answers = stub(proxy).Telemetry(
        iter([rpc.TelemetryCommand(settings=settings)]), metadata=METADATA, timeout=30
    )
    [answer] = list(answers)
    assert answer.status.code == pb.Code.OK, answer.status
    return answer.settings


async def test_settings_tell_a_consumer_its_group_is_fifo(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    done = await trio.to_thread.run_sync(
        lambda: run_cli(
            "client.mqadmin",
            "updateSubGroup",
            "-n",
            ns.addr,
            "-c",
            CLUSTER,
            "-g",
            "FifoSettingsCG",
            "-o",
            "true",
            "-r",
            "5",
        )
    )
    assert done.returncode == 0, done.stderr
    fifo = await trio.to_thread.run_sync(telemetry_settings, proxy, "FifoSettingsCG")
    assert fifo.subscription.fifo
    assert fifo.backoff_policy.max_attempts == 6  # retryMaxTimes + 1
    # a known group's retry policy: 5.x's default CustomizedRetryPolicy, 1 s first
    assert [d.seconds for d in fifo.backoff_policy.customized_backoff.next][:3] == [1, 5, 10]
    plain = await trio.to_thread.run_sync(telemetry_settings, proxy, "PlainSettingsCG")
    assert not plain.subscription.fifo
    assert plain.backoff_policy.max_attempts == 17


async def test_simple_consumer_of_a_fifo_group_gets_the_next_only_after_the_ack(
    proxy_cluster,
) -> None:
    """One queue: the first message stays unacked over a second receive, which brings
    nothing (the queue is blocked for the group); acked, the rest come in order."""
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "FifoSimple", queues=1, message_type="FIFO")
    await orderly_group(ns, "FifoSimpleCG")
    await start_group_at_zero(broker, "FifoSimpleCG", "FifoSimple", queues=1)
    async with Producer.open(ns.addr, "PGFifoSimple") as producer:
        for i in range(3):
            await producer.send(Message("FifoSimple", f"m{i}".encode()))
    lines = await run_sdk(
        {
            "op": "fifo_consume",
            "endpoints": endpoints(proxy),
            "group": "FifoSimpleCG",
            "topic": "FifoSimple",
            "count": 3,
        }
    )
    received = [line for line in lines if "received" in line]
    assert [r["received"]["body"] for r in received] == ["m0", "m1", "m2"]
    assert [r["unacked"] for r in received] == [0, 0, 0]
    assert len([line for line in lines if "acked" in line]) == 3


async def test_push_consumer_of_a_fifo_group_consumes_each_message_group_in_order(
    proxy_cluster,
) -> None:
    """The SDK learns ``fifo`` from the proxy's settings: its listener sees a message group's
    messages in send order, each after the previous one's consumption ended."""
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "FifoPush", queues=2, message_type="FIFO")
    await orderly_group(ns, "FifoPushCG")
    await start_group_at_zero(broker, "FifoPushCG", "FifoPush", queues=2)
    groups = ["ga", "gb"]
    specs = [{"body": f"{g}:{i}", "group": g} for i in range(4) for g in groups]
    sent = await run_sdk(
        {
            "op": "send",
            "endpoints": endpoints(proxy),
            "topic": "FifoPush",
            "mode": "sync",
            "messages": specs,
        }
    )
    assert all(r["ok"] for r in sent), sent
    lines = await run_sdk(
        {
            "op": "push",
            "endpoints": endpoints(proxy),
            "group": "FifoPushCG",
            "topic": "FifoPush",
            "count": len(specs),
            "consume_s": 0.2,
            "linger_s": 1,
        }
    )
    received = [line for line in lines if "received" in line]
    assert sorted(r["received"]["body"] for r in received) == sorted(s["body"] for s in specs)
    for g in groups:
        mine = sorted(
            (r for r in received if r["received"]["group"] == g), key=lambda r: r["started"]
        )
        assert [r["received"]["body"] for r in mine] == [f"{g}:{i}" for i in range(4)]
        for before, after in itertools.pairwise(mine):
            assert before["ended"] <= after["started"], g  # one at a time


async def test_a_fifo_message_past_its_attempts_goes_to_the_dlq_and_the_queue_moves_on(
    proxy_cluster,
) -> None:
    """retryMaxTimes 0: one delivery. Made visible again unacked, the message is popped a
    second time, and the proxy forwards it to %DLQ%group instead of delivering it (as
    PopMessageResultFilterImpl): the next message of the queue comes next (raw gRPC)."""
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "FifoDlq", queues=1, message_type="FIFO")
    await orderly_group(ns, "FifoDlqCG", retry_max_times=0)
    await start_group_at_zero(broker, "FifoDlqCG", "FifoDlq", queues=1)
    async with Producer.open(ns.addr, "PGFifoDlq") as producer:
        for body in (b"poison", b"next"):
            await producer.send(Message("FifoDlq", body))
    request = receive_request("FifoDlq", "FifoDlqCG", batch_size=1)
    [status, first] = await receive(proxy, request)
    assert status.status.code == pb.Code.OK and first.message.body == b"poison"
    change = rpc.ChangeInvisibleDurationRequest(
        group=pb.Resource(name="FifoDlqCG"),
        topic=pb.Resource(name="FifoDlq"),
        receipt_handle=first.message.system_properties.receipt_handle,
        invisible_duration=duration_pb2.Duration(seconds=0),  # visible again at once
        message_id=first.message.system_properties.message_id,
    )
    response = await in_thread(stub(proxy).ChangeInvisibleDuration, change, metadata=METADATA)
    assert response.status.code == pb.Code.OK, response.status
    bodies: list[bytes] = []

    async def next_delivered() -> bool:
        bodies.extend(r.message.body for r in await receive(proxy, request) if r.message.body)
        return bool(bodies)

    await wait_until(next_delivered, 60, "the message after the dead-lettered one")
    assert bodies == [b"next"]
    async with RemotingClient.open() as client:
        dead = await pull_all(client, broker.addr, "%DLQ%FifoDlqCG", 0)
    assert [m.body for m in dead] == [b"poison"]
