"""Consumer groups as a real broker sees them: heartbeats (in the C++ client's own shape),
membership notifications, consumer lists, queue locks, connections and consume stats."""

from __future__ import annotations

import json

import trio

from remoting.body import ConsumerConnection, ConsumeStats, LockBatchResponseBody
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker


def cpp_heartbeat(client_id: str, group: str, expression: str = "TagA || TagB") -> RemotingCommand:
    """The body the official C++ client sends: enum ordinals, string subVersion, zero codes."""
    retry = "%RETRY%" + group
    body = json.dumps(
        {
            "clientID": client_id,
            "consumerDataSet": [
                {
                    "consumeFromWhere": 0,
                    "consumeType": 1,
                    "groupName": group,
                    "messageModel": 1,
                    "subscriptionDataSet": [
                        {"subString": "*", "subVersion": "1795", "topic": retry},
                        {
                            "codeSet": [0, 0],
                            "subString": expression,
                            "subVersion": "1795",
                            "tagsSet": [t.strip() for t in expression.split("||")],
                            "topic": "TopicTest",
                        },
                    ],
                }
            ],
        }
    )
    request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, body.encode(), language="CPP")
    request.version = 63
    return request


async def test_joining_member_triggers_notify_and_both_are_listed(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    notified = trio.Event()

    def on_notify(connection: object, request: RemotingCommand) -> None:
        assert request.ext("consumerGroup") == "G1"
        notified.set()

    async with RemotingClient.open() as first, RemotingClient.open() as second:
        first.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
        assert (await call(first, broker.addr, cpp_heartbeat("c1", "G1"))).code == 0
        notified = trio.Event()  # the first member's own join may notify it too
        assert (await call(second, broker.addr, cpp_heartbeat("c2", "G1"))).code == 0
        with trio.fail_after(5):
            await notified.wait()
        listed = await call(
            first,
            broker.addr,
            RemotingCommand.request(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G1"}
            ),
        )
        assert sorted(decode_body(dict, listed.body)["consumerIdList"]) == ["c1", "c2"]
        await second.aclose()  # a closed connection leaves the group
        with trio.fail_after(5):
            while True:
                listed = await call(
                    first,
                    broker.addr,
                    RemotingCommand.request(
                        RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G1"}
                    ),
                )
                if decode_body(dict, listed.body)["consumerIdList"] == ["c1"]:
                    break
                await trio.sleep(0.02)


async def test_members_subscribing_differently_are_shown(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as a, RemotingClient.open() as b:
        await call(a, broker.addr, cpp_heartbeat("c1", "G", "TagA"))
        await call(b, broker.addr, cpp_heartbeat("c2", "G", "TagB"))
        response = await call(
            a,
            broker.addr,
            RemotingCommand.request(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "G"}
            ),
        )
        connection = decode_body(ConsumerConnection, response.body)
        assert {c.client_id for c in connection.connection_set} == {"c1", "c2"}
        assert connection.inconsistent_subscriptions["c1"]["TopicTest"] == "TagA"
        assert connection.inconsistent_subscriptions["c2"]["TopicTest"] == "TagB"
        # The group table carries the server-computed tag hash codes, not the client's zeros.
        sub = connection.subscription_table["TopicTest"]
        assert 0 not in sub.code_set
        offline = await call(
            a,
            broker.addr,
            RemotingCommand.request(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "X"}
            ),
        )
        assert offline.code == ResponseCode.CONSUMER_NOT_ONLINE


async def test_queue_locks_belong_to_one_client_at_a_time(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    mqs = '[{"topic":"T","brokerName":"broker-a","queueId":0},{"topic":"T","brokerName":"broker-a","queueId":1}]'

    def lock(client_id: str, code: int = RequestCode.LOCK_BATCH_MQ) -> RemotingCommand:
        body = f'{{"consumerGroup":"G","clientId":"{client_id}","mqSet":{mqs}}}'
        return RemotingCommand.request(code, {}, body.encode())

    async with RemotingClient.open() as client:
        got = decode_body(LockBatchResponseBody, (await call(client, broker.addr, lock("c1"))).body)
        assert len(got.lock_ok_mq_set) == 2
        other = decode_body(
            LockBatchResponseBody, (await call(client, broker.addr, lock("c2"))).body
        )
        assert other.lock_ok_mq_set == []
        await call(client, broker.addr, lock("c1", RequestCode.UNLOCK_BATCH_MQ))
        other = decode_body(
            LockBatchResponseBody, (await call(client, broker.addr, lock("c2"))).body
        )
        assert len(other.lock_ok_mq_set) == 2


async def test_consume_stats_report_broker_and_consumer_offsets(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        for _ in range(4):
            await call(client, broker.addr, send_request("S", b"x", queue_id=1))
        await call(
            client,
            broker.addr,
            RemotingCommand.request(
                RequestCode.UPDATE_CONSUMER_OFFSET,
                {"consumerGroup": "G", "topic": "S", "queueId": "1", "commitOffset": "1"},
            ),
        )
        response = await call(
            client,
            broker.addr,
            RemotingCommand.request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "G"}),
        )
        stats = decode_body(ConsumeStats, response.body)
        by_queue = {mq.queue_id: w for mq, w in stats.offset_table.items()}
        assert (by_queue[1].broker_offset, by_queue[1].consumer_offset) == (4, 1)
        assert by_queue[1].last_timestamp > 0
