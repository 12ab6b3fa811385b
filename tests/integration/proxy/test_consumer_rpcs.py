"""The consumer RPCs as raw gRPC: a dead-lettered message lands in %DLQ%group and does not
come back; receipt handles, invisible times, groups and polling times a client got wrong are
each refused with the Proxy's Code."""

from __future__ import annotations

from google.protobuf import duration_pb2

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.integration.proxy.proxykit import (
    METADATA,
    create_topic,
    in_thread,
    raw_message,
    start_group_at_zero,
    stub,
)
from tests.kits.brokerkit import call, pull_all
from tests.kits.popkit import pop_request

Code = pb.Code


def receive_request(topic: str, group: str, **fields) -> rpc.ReceiveMessageRequest:
    fields.setdefault("invisible_duration", duration_pb2.Duration(seconds=20))
    fields.setdefault("long_polling_timeout", duration_pb2.Duration(seconds=5))
    return rpc.ReceiveMessageRequest(
        group=pb.Resource(name=group),
        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        batch_size=fields.pop("batch_size", 16),
        **fields,
    )


async def receive(proxy, request) -> list[rpc.ReceiveMessageResponse]:
    """The stream's responses; its last one is always the delivery timestamp."""
    responses = await in_thread(
        lambda **kw: list(stub(proxy).ReceiveMessage(request, **kw)), metadata=METADATA
    )
    assert responses[-1].HasField("delivery_timestamp"), responses
    return responses[:-1]


async def send_one(proxy, topic: str, body: bytes) -> str:
    message = raw_message(topic, body=body)
    request = rpc.SendMessageRequest(messages=[message])
    response = await in_thread(stub(proxy).SendMessage, request, metadata=METADATA)
    assert response.status.code == Code.OK, response.status
    return message.system_properties.message_id


async def test_forward_to_dead_letter_queue(proxy_cluster) -> None:
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "DlqT")
    await start_group_at_zero(broker, "DlqCG", "DlqT")
    message_id = await send_one(proxy, "DlqT", b"poison")
    responses = await receive(proxy, receive_request("DlqT", "DlqCG"))
    assert responses[0].status.code == Code.OK
    [message] = [r.message for r in responses[1:]]
    assert message.system_properties.message_id == message_id
    forward = rpc.ForwardMessageToDeadLetterQueueRequest(
        group=pb.Resource(name="DlqCG"),
        topic=pb.Resource(name="DlqT"),
        receipt_handle=message.system_properties.receipt_handle,
        message_id=message_id,
        delivery_attempt=1,
        max_delivery_attempts=16,
    )
    response = await in_thread(
        stub(proxy).ForwardMessageToDeadLetterQueue, forward, metadata=METADATA
    )
    assert response.status.code == Code.OK, response.status
    async with RemotingClient.open() as client:
        dead = await pull_all(client, broker.addr, "%DLQ%DlqCG", 0)
    assert [m.body for m in dead] == [b"poison"]
    assert dead[0].properties["UNIQ_KEY"] == message_id
    # acked when it was forwarded: the group does not see it again (asked of the broker
    # directly: through the proxy an empty receive waits its 5 s minimum of long polling)
    async with RemotingClient.open() as client:
        response = await call(client, broker.addr, pop_request("DlqT", "DlqCG", poll_ms=300))
    assert response.code == ResponseCode.POLLING_TIMEOUT


async def test_consumer_requests_a_client_got_wrong(proxy_cluster) -> None:
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "BadConsume")
    await start_group_at_zero(broker, "BadCG", "BadConsume")
    message_id = await send_one(proxy, "BadConsume", b"x")
    responses = await receive(proxy, receive_request("BadConsume", "BadCG"))
    handle = responses[1].message.system_properties.receipt_handle

    def ack(receipt: str) -> rpc.AckMessageRequest:
        entry = rpc.AckMessageEntry(message_id=message_id, receipt_handle=receipt)
        return rpc.AckMessageRequest(
            group=pb.Resource(name="BadCG"), topic=pb.Resource(name="BadConsume"), entries=[entry]
        )

    forged = [
        "",
        "garbage",
        handle.replace(" ", "  "),
        handle + " 1",
        "0 1 2 3 0 broker-a 0 -1 5",
        "x" * 2000,
    ]
    for receipt in forged:
        response = await in_thread(stub(proxy).AckMessage, ack(receipt), metadata=METADATA)
        assert response.entries[0].status.code == Code.INVALID_RECEIPT_HANDLE, receipt
    expired = handle.split(" ")
    expired[1] = "1000"  # popped in 1970: long invisible no more
    response = await in_thread(stub(proxy).AckMessage, ack(" ".join(expired)), metadata=METADATA)
    assert response.entries[0].status.code == Code.INVALID_RECEIPT_HANDLE

    too_short = receive_request(
        "BadConsume", "BadCG", invisible_duration=duration_pb2.Duration(seconds=1)
    )
    assert [r.status.code for r in await receive(proxy, too_short)] == [Code.ILLEGAL_INVISIBLE_TIME]
    bad_group = receive_request("BadConsume", "bad group!")
    assert [r.status.code for r in await receive(proxy, bad_group)] == [Code.ILLEGAL_CONSUMER_GROUP]
    change = rpc.ChangeInvisibleDurationRequest(
        group=pb.Resource(name="BadCG"),
        topic=pb.Resource(name="BadConsume"),
        receipt_handle=handle,
        invisible_duration=duration_pb2.Duration(seconds=13 * 3600),
        message_id=message_id,
    )
    response = await in_thread(stub(proxy).ChangeInvisibleDuration, change, metadata=METADATA)
    assert response.status.code == Code.ILLEGAL_INVISIBLE_TIME
    # the real handle still acks
    response = await in_thread(stub(proxy).AckMessage, ack(handle), metadata=METADATA)
    assert response.status.code == Code.OK, response.status


async def test_an_ack_with_the_handle_a_change_returned_holds(proxy_cluster) -> None:
    """ChangeInvisibleDuration's new handle names the message's own offset as its checkpoint's
    start (the broker's new checkpoint starts there, as MQClientAPIImpl builds the extraInfo):
    an ack with it matches, so the message does not come back after its new invisible time."""
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "ChangeAck", queues=1)  # the three in one queue, one pop
    await start_group_at_zero(broker, "ChangeCG", "ChangeAck")
    ids = [await send_one(proxy, "ChangeAck", b"m%d" % i) for i in range(3)]
    responses = await receive(proxy, receive_request("ChangeAck", "ChangeCG", batch_size=3))
    messages = {r.message.system_properties.message_id: r.message for r in responses[1:]}
    assert set(messages) == set(ids)  # one checkpoint, starting at the first
    second = messages[ids[1]]
    change = rpc.ChangeInvisibleDurationRequest(
        group=pb.Resource(name="ChangeCG"),
        topic=pb.Resource(name="ChangeAck"),
        receipt_handle=second.system_properties.receipt_handle,
        invisible_duration=duration_pb2.Duration(seconds=1),
        message_id=ids[1],
    )
    changed = await in_thread(stub(proxy).ChangeInvisibleDuration, change, metadata=METADATA)
    assert changed.status.code == Code.OK, changed.status
    entry = rpc.AckMessageEntry(message_id=ids[1], receipt_handle=changed.receipt_handle)
    ack = rpc.AckMessageRequest(
        group=pb.Resource(name="ChangeCG"), topic=pb.Resource(name="ChangeAck"), entries=[entry]
    )
    acked = await in_thread(stub(proxy).AckMessage, ack, metadata=METADATA)
    assert acked.status.code == Code.OK, acked.status
    # past its new invisible time (the other two stay invisible 20 s): nothing comes back
    async with RemotingClient.open() as client:
        request = pop_request("ChangeAck", "ChangeCG", poll_ms=3000)
        response = await call(client, broker.addr, request)
    assert response.code == ResponseCode.POLLING_TIMEOUT, response.body
