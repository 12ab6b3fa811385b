"""Bad requests against a real broker: each gets RocketMQ's response code and a remark naming
the problem, or its connection is dropped alone; everyone else keeps being served."""

from __future__ import annotations

import struct

import pytest
import trio

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, encode_command
from tests.kits.brokerkit import (
    broker_conf,
    call,
    pull_request,
    send_request,
    start_broker,
)


@pytest.fixture
def broker(processes, tmp_path):
    return start_broker(processes, broker_conf(tmp_path, maxMessageSize=1024))


@pytest.mark.parametrize(
    ("request_factory", "code", "remark_part"),
    [
        (lambda: send_request("bad topic!", b"x"), ResponseCode.SYSTEM_ERROR, "illegal"),
        (lambda: send_request("T" * 128, b"x"), ResponseCode.SYSTEM_ERROR, "127"),
        (lambda: send_request("Big", b"x" * 2048), ResponseCode.MESSAGE_ILLEGAL, "2048"),
        (lambda: send_request("Q", b"x", queue_id=99), ResponseCode.SYSTEM_ERROR, "queueId[99]"),
        (
            lambda: send_request("SCHEDULE_TOPIC_XXXX", b"x"),
            ResponseCode.NO_PERMISSION,
            "forbidden",
        ),
        (lambda: pull_request("NoSuchTopic", 0, 0), ResponseCode.TOPIC_NOT_EXIST, "NoSuchTopic"),
        (
            lambda: RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG"}, b"x"),
            ResponseCode.SYSTEM_ERROR,
            "SendMessageRequestHeaderV2",
        ),
        (
            lambda: RemotingCommand.request(RequestCode.HEART_BEAT, {}, b"{not json"),
            ResponseCode.SYSTEM_ERROR,
            "HeartbeatData",
        ),
        (
            lambda: RemotingCommand.request(9999, {}),
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            "9999",
        ),
        # the broker's own topics, as TopicValidator.isSystemTopic (deleting SCHEDULE_TOPIC_XXXX
        # would drop every delayed message)
        (
            lambda: RemotingCommand.request(
                RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "SCHEDULE_TOPIC_XXXX"}
            ),
            ResponseCode.SYSTEM_ERROR,
            "conflict with system topic",
        ),
        (
            lambda: RemotingCommand.request(
                RequestCode.UPDATE_AND_CREATE_TOPIC,
                {
                    "topic": "TestCluster",
                    "defaultTopic": "TBW102",
                    "readQueueNums": "1",
                    "writeQueueNums": "1",
                    "perm": "6",
                    "topicFilterType": "SINGLE_TAG",
                },
            ),
            ResponseCode.SYSTEM_ERROR,
            "conflict with system topic",
        ),
        # operators' requests this stop added
        (
            lambda: RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, b"\xff\xfe"),
            ResponseCode.SYSTEM_ERROR,
            "string2Properties error",
        ),
        (
            lambda: RemotingCommand.request(
                RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "X"}
            ),
            ResponseCode.SYSTEM_ERROR,
            "The stats <TOPIC_PUT_NUMS> <X> not exist",
        ),
        (
            lambda: RemotingCommand.request(
                RequestCode.QUERY_CONSUME_QUEUE, {"topic": "Nope", "queueId": "0", "index": "0"}
            ),
            ResponseCode.SYSTEM_ERROR,
            "0@Nope is not exist!",
        ),
        (
            lambda: RemotingCommand.request(
                RequestCode.QUERY_CONSUME_QUEUE, {"topic": "Nope", "queueId": "zero"}
            ),
            ResponseCode.SYSTEM_ERROR,
            "queueId='zero' is not a number",
        ),
        (
            lambda: RemotingCommand.request(
                RequestCode.CONSUME_MESSAGE_DIRECTLY,
                {"consumerGroup": "G", "clientId": "c", "msgId": "not-an-id"},
            ),
            ResponseCode.SYSTEM_ERROR,
            "The Consumer <G> <c> not online",
        ),
        (
            lambda: RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {}),
            ResponseCode.SYSTEM_ERROR,
            "consumerGroup",
        ),
        (
            lambda: send_request(
                "TestCluster_REPLY_TOPIC", b"x", code=RequestCode.SEND_REPLY_MESSAGE_V2
            ),
            ResponseCode.SYSTEM_ERROR,
            "REPLY_TO_CLIENT",
        ),
    ],
)
async def test_bad_requests_get_the_proper_code(broker, request_factory, code, remark_part) -> None:
    async with RemotingClient.open() as client:
        response = await call(client, broker.addr, request_factory())
        assert response.code == code
        assert remark_part in (response.remark or "")
        # The same connection still works.
        assert (await call(client, broker.addr, send_request("Fine", b"ok"))).code == 0


async def test_garbage_and_a_half_sent_frame_drop_only_their_connection(broker) -> None:
    host, port = broker.addr.split(":")
    garbage = await trio.open_tcp_stream(host, int(port))
    await garbage.send_all(struct.pack(">i", 2**31 - 1) + b"\x00" * 16)
    half = await trio.open_tcp_stream(host, int(port))
    frame = b"".join(bytes(b) for b in encode_command(send_request("Half", b"body")))
    await half.send_all(frame[: len(frame) // 2])
    await half.aclose()  # the client disconnects mid-request
    with trio.fail_after(5):
        assert await garbage.receive_some(1024) == b""  # closed by the broker
    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, send_request("Fine", b"ok"))).code == 0
        half_written = await call(client, broker.addr, pull_request("Half", 0, 0))
        assert half_written.code == ResponseCode.TOPIC_NOT_EXIST


async def test_slave_refuses_sends_and_suggests_pulling_from_its_master(
    processes, tmp_path
) -> None:
    slave = start_broker(processes, broker_conf(tmp_path, brokerId=1))
    async with RemotingClient.open() as client:
        refused = await call(client, slave.addr, send_request("T", b"x"))
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
        pulled = await call(client, slave.addr, pull_request("TBW102", 0, 0))
        # Served from the (empty) replica, as Java does; the suggestion points at the master.
        assert pulled.code == ResponseCode.PULL_NOT_FOUND
        assert pulled.ext("suggestWhichBrokerId") == "0"
