"""Lookups tools and clients make against a real ``mqbroker``: earliest store time, who consumes
a topic, the system topics, the whole offset and group tables, and the client config check."""

from __future__ import annotations

import time

from remoting import constants as K
from remoting.body import (
    ConsumerOffsetSerializeWrapper,
    GroupList,
    QueryConsumeTimeSpanBody,
    SubscriptionGroupWrapper,
    TopicList,
)
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body
from tests.kits.brokerkit import broker_conf, call, send_request, start_broker


def request(code: int, fields: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.request(code, fields or {}, body)


async def test_offsets_times_and_topic_lookups(processes, tmp_path) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        before = int(time.time() * 1000)
        for body in (b"one", b"two"):
            sent = await call(client, broker.addr, send_request("Lookups", body, queue_id=0))
            assert sent.code == ResponseCode.SUCCESS
        after = int(time.time() * 1000)
        earliest = await call(
            client,
            broker.addr,
            request(RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": "Lookups", "queueId": "0"}),
        )
        assert before <= int(earliest.ext_fields["timestamp"]) <= after
        empty = await call(
            client,
            broker.addr,
            request(RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": "Lookups", "queueId": "3"}),
        )
        assert empty.ext_fields["timestamp"] == "-1"

        commit = {"consumerGroup": "G", "topic": "Lookups", "queueId": "0", "commitOffset": "2"}
        updated = await call(
            client, broker.addr, request(RequestCode.UPDATE_CONSUMER_OFFSET, commit)
        )
        assert updated.code == ResponseCode.SUCCESS
        who = await call(
            client,
            broker.addr,
            request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "Lookups"}),
        )
        assert decode_body(GroupList, who.body).group_list == ["G"]
        offsets = await call(client, broker.addr, request(RequestCode.GET_ALL_CONSUMER_OFFSET))
        table = decode_body(ConsumerOffsetSerializeWrapper, offsets.body).offset_table
        assert table["Lookups@G"] == {0: 2}

        groups = await call(
            client, broker.addr, request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        )
        group_table = decode_body(SubscriptionGroupWrapper, groups.body).subscription_group_table
        # Java's built-in groups; committing an offset does not create a group (a heartbeat or
        # a pull does, with autoCreateSubscriptionGroup).
        assert "TOOLS_CONSUMER" in group_table and "G" not in group_table

        system = await call(
            client, broker.addr, request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
        )
        listed = decode_body(TopicList, system.body).topic_list
        assert K.DEFAULT_TOPIC in listed and K.SCHEDULE_TOPIC in listed and "Lookups" not in listed
        assert K.reply_topic("TestCluster") in listed and "TestCluster" in listed


async def test_check_client_config_accepts_tags_and_refuses_other_filters(
    processes, tmp_path
) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))

    def check(expression_type: str) -> RemotingCommand:
        body = (
            '{"clientId":"10.0.0.9@1","group":"G","subscriptionData":{"topic":"T",'
            f'"subString":"a > 1","expressionType":"{expression_type}","subVersion":1}}}}'
        )
        return request(RequestCode.CHECK_CLIENT_CONFIG, {}, body.encode())

    async with RemotingClient.open() as client:
        assert (await call(client, broker.addr, check("TAG"))).code == ResponseCode.SUCCESS
        refused = await call(client, broker.addr, check("SQL92"))
        assert refused.code == ResponseCode.SYSTEM_ERROR and "SQL92" in refused.remark


async def test_consume_time_span_says_how_far_behind_a_group_is_in_time(
    processes, tmp_path
) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        for _ in range(3):
            await call(client, broker.addr, send_request("Span", b"x"))
        commit = {"consumerGroup": "SpanG", "topic": "Span", "queueId": "0", "commitOffset": "1"}
        await call(client, broker.addr, request(RequestCode.UPDATE_CONSUMER_OFFSET, commit))
        answer = await call(
            client,
            broker.addr,
            request(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "Span", "group": "SpanG"}),
        )
        spans = decode_body(QueryConsumeTimeSpanBody, answer.body).consume_time_span_set
        first = spans[0]
        assert first.message_queue.queue_id == 0 and first.min_time_stamp > 0
        assert first.min_time_stamp <= first.consume_time_stamp <= first.max_time_stamp
        assert first.delay_time >= 0  # the second message waits since it was stored
        missing = await call(
            client,
            broker.addr,
            request(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "Nope", "group": "SpanG"}),
        )
        assert (missing.code, missing.remark) == (
            ResponseCode.TOPIC_NOT_EXIST,
            "topic[Nope] not exist",
        )
