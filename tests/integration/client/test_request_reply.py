"""Request-reply through real mqnamesrv + mqbroker processes: a producer's request reaches a
consumer, whose answer the broker pushes straight back to the requester (and stores in the
cluster's reply topic), as RocketMQ 4.6+ does."""

from __future__ import annotations

import pytest
import trio

from client.admin import AdminClient
from client.consumer import ConsumeStatus, PushConsumer
from client.errors import MQClientError
from client.message import Message
from client.producer import Producer
from client.request_reply import RequestTimeoutError, create_reply_message
from remoting.body import ConsumeFromWhere, TopicConfig
from remoting.client import RemotingClient
from remoting.message import MessageConst, MessageExt
from tests.kits.brokerkit import wait_for_route

REPLY_TOPIC = "TestCluster_REPLY_TOPIC"  # the test broker's cluster + "_REPLY_TOPIC"


async def ask_topic(ns, topic: str = "Ask") -> None:
    """The requests' topic, created and routed before the answering consumer starts (a consumer
    learns of a topic created later only at its next route refresh)."""
    async with AdminClient.open(ns.addr) as admin, RemotingClient.open() as client:
        await admin.create_topic_in_cluster("TestCluster", TopicConfig(topic_name=topic))
        await wait_for_route(client, ns.addr, topic, bool)


async def test_a_request_gets_the_answer_its_consumer_sends(cluster) -> None:
    ns, _ = cluster
    await ask_topic(ns)
    async with (
        Producer.open(ns.addr, "ReplierPG") as replier,
        Producer.open(ns.addr, "RequesterPG") as requester,
    ):

        async def answer(msgs) -> ConsumeStatus:
            for msg in msgs:
                assert msg.properties[MessageConst.CLUSTER] == "TestCluster"
                await replier.send(create_reply_message(msg, b"answer to " + msg.body))
            return ConsumeStatus.CONSUME_SUCCESS

        async with PushConsumer.open(ns.addr, "AskCG", answer, {"Ask": "*"}):
            for question in (b"q1", b"q2"):
                reply = await requester.request(Message("Ask", question), timeout_s=20)
                assert reply.body == b"answer to " + question
                assert reply.topic == REPLY_TOPIC
                props = reply.properties
                assert props[MessageConst.REPLY_TO_CLIENT] == requester.instance.client_id
                assert int(props[MessageConst.ARRIVE_TIME]) >= int(props["PUSH_REPLY_TIME"])


async def test_answers_are_also_stored_in_the_reply_topic(cluster) -> None:
    ns, _ = cluster
    # Its own topic and group: the module's cluster is shared, and AskCG would find the other
    # test's questions on "Ask" again if that test's consumer had not committed them yet.
    await ask_topic(ns, "AskStored")
    async with Producer.open(ns.addr, "RequesterPG") as requester:

        async def answer(msgs) -> ConsumeStatus:
            async with Producer.open(ns.addr, "ReplierPG") as replier:
                await replier.send(create_reply_message(msgs[0], b"stored answer"))
            return ConsumeStatus.CONSUME_SUCCESS

        async with PushConsumer.open(ns.addr, "AskStoredCG", answer, {"AskStored": "*"}):
            await requester.request(Message("AskStored", b"q"), timeout_s=20)
    stored: list[bytes] = []
    got = trio.Event()

    def keep(msgs) -> ConsumeStatus:
        stored.extend(m.body for m in msgs)
        if b"stored answer" in stored:
            got.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer.open(
        ns.addr,
        "ReplyReaderCG",
        keep,
        {REPLY_TOPIC: "*"},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):
        with trio.fail_after(30):
            await got.wait()
    # The reply topic is the cluster's: the module's other tests' answers are there too.
    assert stored.count(b"stored answer") == 1


async def test_a_request_nobody_answers_times_out(cluster) -> None:
    ns, _ = cluster
    async with Producer.open(ns.addr, "RequesterPG") as requester:
        with pytest.raises(RequestTimeoutError, match="wait reply message timeout, 500 ms"):
            await requester.request(Message("Unanswered", b"q"), timeout_s=0.5)


async def test_an_answer_for_a_requester_that_is_gone_is_refused_by_name(cluster) -> None:
    ns, _ = cluster
    asked = MessageExt(
        topic="Ask",
        body=b"q",
        properties={
            MessageConst.CLUSTER: "TestCluster",
            MessageConst.CORRELATION_ID: "c-1",
            MessageConst.REPLY_TO_CLIENT: "10.9.9.9@gone",
        },
    )
    async with Producer.open(ns.addr, "ReplierPG") as replier:
        with pytest.raises(MQClientError) as refused:
            await replier.send(create_reply_message(asked, b"too late"))
    assert "channel of <10.9.9.9@gone> not found" in str(refused.value)


def test_a_reply_needs_the_cluster_the_broker_put_on_the_request() -> None:
    with pytest.raises(MQClientError, match=r"property\[CLUSTER\] is null"):
        create_reply_message(MessageExt(topic="Ask", body=b"q"), b"answer")
