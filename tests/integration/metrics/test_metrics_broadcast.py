"""A broadcasting group on a real broker: each client's progress is exported per client from its
own offsets (its running info), and the broker's offset table gives the group no figure."""

from __future__ import annotations

import trio

from client.consumer import ConsumeStatus, PushConsumer
from client.message import Message
from client.producer import Producer
from remoting.body import ConsumeFromWhere, MessageModel
from remoting.client import RemotingClient
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv, wait_for_route
from tests.kits.hakit import wait_until
from tests.kits.metricskit import scrape, value

TOPIC, GROUP, MESSAGES = "BroadcastTopic", "BroadcastGroup", 12


async def test_broadcast_clients_report_their_own_lag(processes, tmp_path) -> None:
    namesrv = start_namesrv(processes, tmp_path)
    conf = broker_conf(
        tmp_path,
        namesrvAddr=namesrv.addr,
        metricsExporterType="PROM",
        metricsPromExporterPort=0,
        metricsBroadcastProbeInterval=200,
    )
    port = start_broker(processes, conf).metrics_port
    async with Producer.open(namesrv.addr, "BroadcastPG") as producer:
        for n in range(MESSAGES):
            await producer.send(Message(TOPIC, b"m%d" % n))
    async with RemotingClient.open() as client:
        await wait_for_route(client, namesrv.addr, TOPIC, bool)
    consumed = 0

    def keeps_up(messages) -> ConsumeStatus:
        nonlocal consumed
        consumed += len(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async def stuck(messages) -> ConsumeStatus:
        await trio.sleep_forever()

    common = {
        "message_model": MessageModel.BROADCASTING,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        "offset_dir": tmp_path / "offsets",
    }
    async with (
        PushConsumer.open(
            namesrv.addr, GROUP, keeps_up, {TOPIC: "*"}, instance_name="fast", **common
        ) as fast,
        PushConsumer.open(
            namesrv.addr, GROUP, stuck, {TOPIC: "*"}, instance_name="slow", **common
        ) as slow,
    ):
        ids = {"fast": fast.instance.client_id, "slow": slow.instance.client_id}

        def lag(which: str, samples) -> float | None:
            return value(
                samples,
                "rocketmq_consumer_client_lag_messages",
                consumer_group=GROUP,
                topic=TOPIC,
                client_id=ids[which],
            )

        async def settled() -> bool:
            samples = await scrape(port)
            return lag("fast", samples) == 0 and lag("slow", samples) == MESSAGES

        await wait_until(settled, what="each client's own lag")
        samples = await scrape(port)
        assert consumed == MESSAGES
        latency = value(
            samples,
            "rocketmq_consumer_client_lag_latency",
            consumer_group=GROUP,
            client_id=ids["slow"],
        )
        assert latency > 0
        assert value(samples, "rocketmq_group_diff", group=GROUP) is None
        assert value(samples, "rocketmq_consumer_lag_messages", consumer_group=GROUP) is None
