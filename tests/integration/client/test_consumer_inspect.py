"""Operators looking inside a consumer through the broker (real mqnamesrv + mqbroker, our
client on both ends): GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY are forwarded to
the consumer named by group and client id, and its answer comes back (mqadmin consumerStatus,
queryMsgById -g -d)."""

from __future__ import annotations

import pytest
import trio

from client.admin import AdminClient
from client.consumer import ConsumeStatus, PushConsumer
from client.errors import MQBrokerError
from client.message import Message
from client.producer import Producer
from remoting.body import CMResult
from remoting.codes import ResponseCode
from tests.integration.client.test_mqadmin import as_json

pytestmark = pytest.mark.usefixtures("cluster")


class Listener:
    """Consumes everything; a body starting with b"later" asks for a retry, b"boom" raises."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.changed = trio.Event()

    def __call__(self, msgs) -> ConsumeStatus:
        for msg in msgs:
            self.bodies.append(msg.body)
        self.changed.set()
        self.changed = trio.Event()
        if msgs[0].body.startswith(b"boom"):
            raise ValueError("the listener failed on purpose")
        if msgs[0].body.startswith(b"later"):
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    async def wait_for(self, body: bytes) -> None:
        with trio.fail_after(30):
            while body not in self.bodies:
                await self.changed.wait()


async def test_an_operator_sees_inside_a_consumer_and_has_it_consume_again(cluster) -> None:
    ns, _ = cluster
    listener = Listener()
    async with Producer.open(ns.addr, "InspectPG") as producer:
        sent = [await producer.send(Message("Inspect", f"m{i}".encode())) for i in range(3)]
    async with (
        PushConsumer.open(ns.addr, "InspectCG", listener, {"Inspect": "*"}) as consumer,
        AdminClient.open(ns.addr) as admin,
    ):
        await listener.wait_for(b"m2")
        client_id = consumer.instance.client_id

        info = await admin.consumer_running_info("InspectCG", client_id)
        assert info.properties["consumerGroup"] == "InspectCG"
        assert info.properties["PROP_CONSUME_ORDERLY"] == "false"
        assert int(info.properties["PROP_CONSUMER_START_TIMESTAMP"]) > 0
        assert {s.topic for s in info.subscription_set} == {"Inspect", "%RETRY%InspectCG"}
        inspect_queues = {mq: pq for mq, pq in info.mq_table.items() if mq.topic == "Inspect"}
        assert inspect_queues and not any(pq.droped for pq in inspect_queues.values())
        assert max(pq.last_pull_timestamp for pq in inspect_queues.values()) > 0

        before = await admin.consume_stats("InspectCG", "Inspect")
        again = await admin.consume_message_directly("InspectCG", client_id, sent[1].offset_msg_id)
        assert again.consume_result is CMResult.CR_SUCCESS and not again.order
        assert listener.bodies.count(b"m1") == 2  # delivered once, then once more on request
        assert await admin.consume_stats("InspectCG", "Inspect") == before  # nothing committed

        # the same through mqadmin, run as an operator would (in a thread: the consumer in this
        # process has to answer meanwhile)
        status = await trio.to_thread.run_sync(as_json, ns, "consumerStatus", "-g", "InspectCG")
        assert list(status) == [client_id]
        assert status[client_id]["properties"]["consumerGroup"] == "InspectCG"
        view = await trio.to_thread.run_sync(
            as_json, ns, "queryMsgById", "-i", sent[0].offset_msg_id, "-g", "InspectCG",
            "-d", client_id,
        )  # fmt: skip
        assert view["consumeMessageDirectly"]["consumeResult"] == "CR_SUCCESS"
        assert listener.bodies.count(b"m0") == 2


async def test_consuming_directly_reports_what_the_listener_did(cluster) -> None:
    ns, _ = cluster
    listener = Listener()
    async with Producer.open(ns.addr, "InspectPG") as producer:
        later = await producer.send(Message("Inspect2", b"later-1"))
        boom = await producer.send(Message("Inspect2", b"boom-1"))
    async with (
        PushConsumer.open(ns.addr, "InspectCG2", listener, {"Inspect2": "*"}) as consumer,
        AdminClient.open(ns.addr) as admin,
    ):
        await listener.wait_for(b"boom-1")
        client_id = consumer.instance.client_id
        result = await admin.consume_message_directly("InspectCG2", client_id, later.offset_msg_id)
        assert result.consume_result is CMResult.CR_LATER
        result = await admin.consume_message_directly("InspectCG2", client_id, boom.offset_msg_id)
        assert result.consume_result is CMResult.CR_THROW_EXCEPTION
        assert result.remark == "ValueError: the listener failed on purpose"


async def test_a_client_that_is_not_online_is_named_in_the_refusal(cluster) -> None:
    ns, _ = cluster
    listener = Listener()
    async with Producer.open(ns.addr, "InspectPG") as producer:
        await producer.send(Message("Inspect3", b"m"))
    async with (
        PushConsumer.open(ns.addr, "InspectCG3", listener, {"Inspect3": "*"}),
        AdminClient.open(ns.addr) as admin,
    ):
        await listener.wait_for(b"m")  # the group is online (and its retry topic routed)
        with pytest.raises(MQBrokerError) as refused:
            await admin.consumer_running_info("InspectCG3", "10.9.9.9@gone")
        assert refused.value.code == ResponseCode.SYSTEM_ERROR
        assert "The Consumer <InspectCG3> <10.9.9.9@gone> not online" in str(refused.value)
