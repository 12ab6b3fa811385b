"""Requests no well-behaved SDK sends, as raw gRPC: each gets the Status RocketMQ's Proxy
answers with, nothing of them is stored, and the proxy keeps serving."""

from __future__ import annotations

import json
import socket
import subprocess

import grpc
import pytest
from google.protobuf import timestamp_pb2

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from tests.harness import python_module
from tests.integration.proxy.conftest import MAX_BODY
from tests.integration.proxy.proxykit import METADATA, create_topic, in_thread, raw_message, stub
from tests.kits.consumekit import consume_until

Code = pb.Code


async def send(proxy, *messages: pb.Message, metadata=METADATA) -> rpc.SendMessageResponse:
    request = rpc.SendMessageRequest(messages=list(messages))
    return await in_thread(stub(proxy).SendMessage, request, metadata=metadata)


async def test_unknown_topic_is_topic_not_found(proxy_cluster) -> None:
    _, _, proxy = proxy_cluster
    route = await in_thread(
        stub(proxy).QueryRoute,
        rpc.QueryRouteRequest(topic=pb.Resource(name="NoSuchTopic")),
        metadata=METADATA,
    )
    assert route.status.code == Code.TOPIC_NOT_FOUND
    sent = await send(proxy, raw_message("NoSuchTopic"))
    assert sent.status.code == Code.TOPIC_NOT_FOUND
    assert [e.status.code for e in sent.entries] == [Code.TOPIC_NOT_FOUND]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (raw_message("BadIn", body=b"x" * (MAX_BODY + 1)), Code.MESSAGE_BODY_TOO_LARGE),
        (raw_message("BadIn", body=b""), Code.MESSAGE_BODY_EMPTY),
        # no message group: a NORMAL message, which a FIFO topic refuses
        (
            raw_message("BadFifo", message_type=pb.MessageType.FIFO),
            Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
        ),
        # a group makes it FIFO, which a NORMAL topic (no message.type) refuses
        (
            raw_message("BadIn", message_type=pb.MessageType.FIFO, message_group="g"),
            Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
        ),
        (raw_message("BadIn", message_id=""), Code.ILLEGAL_MESSAGE_ID),
        (raw_message("BadIn", tag="a|b"), Code.ILLEGAL_MESSAGE_TAG),
        (raw_message("BadIn", keys=["ok", "bad\x01key"]), Code.ILLEGAL_MESSAGE_KEY),
        (raw_message("BadIn", message_group=" "), Code.ILLEGAL_MESSAGE_GROUP),
        (raw_message("BadIn", message_group="g" * 64), Code.ILLEGAL_MESSAGE_GROUP),
        (raw_message("bad topic!"), Code.ILLEGAL_TOPIC),
        (raw_message("TBW102"), Code.ILLEGAL_TOPIC),
        (
            raw_message("BadIn", delivery_timestamp=timestamp_pb2.Timestamp(seconds=10**13)),
            Code.ILLEGAL_DELIVERY_TIME,
        ),
    ],
    ids=[
        "oversize",
        "empty-body",
        "fifo-without-group",
        "fifo-to-a-normal-topic",
        "no-message-id",
        "tag-with-bar",
        "key-with-control",
        "blank-group",
        "group-too-long",
        "illegal-topic-name",
        "system-topic",
        "delivery-time-out-of-range",
    ],
)
async def test_bad_message_gets_the_proxys_code(proxy_cluster, message, code) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "BadIn")
    await create_topic(ns.addr, "BadFifo", message_type="FIFO")
    response = await send(proxy, message)
    assert response.status.code == code, response.status.message


async def test_reserved_and_oversized_properties_are_refused(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "BadProps")
    reserved = raw_message("BadProps")
    reserved.user_properties["UNIQ_KEY"] = "forged"
    too_many = raw_message("BadProps")
    too_many.user_properties.update({f"k{i}": "v" for i in range(129)})
    too_big = raw_message("BadProps")
    too_big.user_properties["big"] = "v" * (16 * 1024)
    codes = [(await send(proxy, m)).status.code for m in (reserved, too_many, too_big)]
    assert codes == [
        Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
        Code.MESSAGE_PROPERTIES_TOO_LARGE,
        Code.MESSAGE_PROPERTIES_TOO_LARGE,
    ]
    # nothing of them was stored: a good message after them is the only one there
    good = raw_message("BadProps", body=b"good")
    assert (await send(proxy, good)).status.code == Code.OK
    got = await consume_until(ns.addr, "BadPropsCG", "BadProps", lambda m: len(m) >= 1)
    assert [m.body for m in got] == [b"good"]


async def test_malformed_protobuf_fails_the_call_and_the_proxy_serves_on(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    channel = grpc.insecure_channel(proxy.addr)
    raw = channel.unary_unary(
        "/apache.rocketmq.v2.MessagingService/SendMessage",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    garbage = b"\x0a\xff\xff\xff\xff\x0f\x00\x01"  # field 1, length far past the end
    with pytest.raises(grpc.RpcError) as failed:
        await in_thread(raw, garbage, metadata=METADATA)
    assert failed.value.code() == grpc.StatusCode.INTERNAL
    await create_topic(ns.addr, "AfterGarbage")
    ok = await send(proxy, raw_message("AfterGarbage"))
    assert ok.status.code == Code.OK


async def test_calls_without_a_client_id_are_refused(proxy_cluster) -> None:
    _, _, proxy = proxy_cluster
    request = rpc.HeartbeatRequest(client_type=pb.ClientType.PRODUCER)
    response = await in_thread(stub(proxy).Heartbeat, request, metadata=())
    assert response.status.code == Code.CLIENT_ID_REQUIRED
    request = rpc.HeartbeatRequest(client_type=pb.ClientType.CLIENT_TYPE_UNSPECIFIED)
    response = await in_thread(stub(proxy).Heartbeat, request, metadata=METADATA)
    assert response.status.code == Code.UNRECOGNIZED_CLIENT_TYPE


async def test_end_transaction_for_an_unknown_transaction_is_refused(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "BadTx")
    request = rpc.EndTransactionRequest(
        topic=pb.Resource(name="BadTx"),
        message_id="00",
        transaction_id="never-sent",
        resolution=pb.TransactionResolution.COMMIT,
        source=pb.TransactionSource.SOURCE_CLIENT,
    )
    response = await in_thread(stub(proxy).EndTransaction, request, metadata=METADATA)
    assert response.status.code == Code.INVALID_TRANSACTION_ID


def test_mqproxy_on_a_taken_port_exits_naming_the_key(tmp_path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    with taken:
        conf = tmp_path / "rmq-proxy.json"
        port = taken.getsockname()[1]
        conf.write_text(
            json.dumps(
                {
                    "namesrvAddr": "127.0.0.1:9876",
                    "grpcServerPort": port,
                    "grpcServerHost": "127.0.0.1",
                }
            )
        )
        done = subprocess.run(
            python_module("proxy", "-pc", str(conf)), capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 3
    assert f"mqproxy: cannot start: grpcServerPort: cannot bind 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


async def test_a_request_over_the_inbound_limit_is_refused_undecoded(proxy_cluster) -> None:
    ns, _, proxy = proxy_cluster
    await create_topic(ns.addr, "Huge")
    with pytest.raises(grpc.RpcError) as refused:
        await send(proxy, raw_message("Huge", body=b"x" * (16 * 1024 * 1024 + 1)))
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (await send(proxy, raw_message("Huge"))).status.code == Code.OK


async def test_offset_rpcs_are_unimplemented_as_in_rocketmqs_proxy(proxy_cluster) -> None:
    """RocketMQ's Proxy (5.3.3, and develop in September 2025) does not override PullMessage,
    GetOffset, QueryOffset or UpdateOffset: grpc-java answers UNIMPLEMENTED, and no SDK on
    PyPI or npm calls them. mqproxy answers the same, and serves on."""
    _, _, proxy = proxy_cluster
    queue = pb.MessageQueue(topic=pb.Resource(name="AnyTopic"), id=0)
    group = pb.Resource(name="AnyGroup")
    calls = [
        (stub(proxy).GetOffset, rpc.GetOffsetRequest(group=group, message_queue=queue)),
        (stub(proxy).QueryOffset, rpc.QueryOffsetRequest(message_queue=queue)),
        (stub(proxy).UpdateOffset, rpc.UpdateOffsetRequest(group=group, message_queue=queue)),
        (
            lambda request, **kw: list(stub(proxy).PullMessage(request, **kw)),
            rpc.PullMessageRequest(group=group, message_queue=queue, batch_size=1),
        ),
    ]
    for call, request in calls:
        with pytest.raises(grpc.RpcError) as failed:
            await in_thread(call, request, metadata=METADATA)
        assert failed.value.code() == grpc.StatusCode.UNIMPLEMENTED
    request = rpc.HeartbeatRequest(client_type=pb.ClientType.PRODUCER)
    response = await in_thread(stub(proxy).Heartbeat, request, metadata=METADATA)
    assert response.status.code == Code.OK
