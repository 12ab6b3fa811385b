"""A broker with ``aclEnable=true`` against real clients: our client with a valid account
produces and consumes exactly once; a wrong secret, an unknown key, a topic the account may not
publish to, a DENY group and an admin request from a non-admin account are refused with
NO_PERMISSION and Java's remark, and nothing is stored or changed."""

from __future__ import annotations

from collections import Counter

import pytest
import trio

from client.admin import AdminClient
from client.consumer import PushConsumer
from client.errors import MQClientError
from client.message import Message
from client.producer import Producer
from remoting.body import ConsumeFromWhere, TopicConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.kits.aclkit import (
    ADMIN,
    STRANGER,
    USER,
    WRONG_SECRET,
    acl_home,
    refused_by_acl,
    signed_call,
)
from tests.kits.brokerkit import (
    broker_conf,
    pull_request,
    send_request,
    start_broker,
    start_namesrv,
)


@pytest.fixture
def acl_cluster(processes, tmp_path):
    ns = start_namesrv(processes, tmp_path)
    home = acl_home(tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr, aclEnable="true", rocketmqHome=home)
    return ns, start_broker(processes, conf), home


async def max_offset(client: RemotingClient, addr: str, topic: str) -> int:
    request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
    response = await signed_call(client, addr, request, ADMIN)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return int(response.ext("offset") or 0)


async def create_topics(ns_addr: str, *topics: str) -> None:
    async with AdminClient.open(ns_addr, ADMIN) as admin:
        for topic in topics:
            config = TopicConfig(topic_name=topic, read_queue_nums=1, write_queue_nums=1)
            await admin.create_topic_in_cluster("TestCluster", config)


async def test_a_valid_account_produces_and_consumes_exactly_once(acl_cluster) -> None:
    ns, _, _ = acl_cluster
    await create_topics(ns.addr, "Allowed")
    keys = [f"k{i}" for i in range(30)]
    async with Producer.open(ns.addr, "PG", credentials=USER) as producer:
        for key in keys:
            await producer.send(Message("Allowed", key.encode(), keys=key))
    seen: Counter[str] = Counter()
    arrived = trio.Event()

    def listener(messages) -> None:
        seen.update(m.keys for m in messages)
        if len(seen) >= len(keys):
            arrived.set()

    async with PushConsumer.open(
        ns.addr,
        "allowedGroup",
        listener,
        {"Allowed": "*"},
        credentials=USER,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):
        with trio.fail_after(60):
            await arrived.wait()
    assert set(seen) == set(keys) and max(seen.values()) == 1


async def test_refused_sends_and_pulls_store_and_return_nothing(acl_cluster) -> None:
    ns, broker, _ = acl_cluster
    await create_topics(ns.addr, "Allowed", "ReadOnly", "Secret")
    async with RemotingClient.open() as client:
        ok = await signed_call(client, broker.addr, send_request("Allowed", b"x"), USER)
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        before = {t: await max_offset(client, broker.addr, t) for t in ("Allowed", "ReadOnly")}

        for who, topic, reason in [
            (WRONG_SECRET, "Allowed", "Check signature failed for accessKey=aclUser01"),
            (STRANGER, "Allowed", "No acl config for stranger1"),
            (None, "Allowed", "No accessKey is configured"),
            (USER, "ReadOnly", "No default permission for topic:ReadOnly"),
        ]:
            response = await signed_call(client, broker.addr, send_request(topic, b"no"), who)
            assert refused_by_acl(response), (who, topic, response.code, response.remark)
            assert reason in (response.remark or "")
        after = {t: await max_offset(client, broker.addr, t) for t in ("Allowed", "ReadOnly")}
        assert after == before

        pull = pull_request("Allowed", 0, 0, group="allowedGroup")
        assert (await signed_call(client, broker.addr, pull, USER)).code == ResponseCode.SUCCESS
        for group, topic in [("deniedGroup", "Allowed"), ("madeUpGroup", "Allowed"),
                             ("allowedGroup", "Secret")]:  # fmt: skip
            response = await signed_call(
                client, broker.addr, pull_request(topic, 0, 0, group=group), USER
            )
            assert refused_by_acl(response) and not response.body, (group, topic)


async def test_an_admin_request_from_a_non_admin_account_changes_nothing(acl_cluster) -> None:
    _, broker, _ = acl_cluster
    async with RemotingClient.open() as client:
        create = RemotingCommand.request(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {"topic": "Sneaky", "defaultTopic": "TBW102", "readQueueNums": "1",
             "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"},
        )  # fmt: skip
        response = await signed_call(client, broker.addr, create, USER)
        assert refused_by_acl(response)
        assert (response.remark or "").startswith(
            "org.apache.rocketmq.acl.common.AclException: Need admin permission for request "
            "code=17, but accessKey=aclUser01 is not, "
            "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm("
        )
        listing = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {})
        topics = await signed_call(client, broker.addr, listing, USER)  # any account may read
        assert topics.code == ResponseCode.SUCCESS and b"Sneaky" not in topics.body


async def test_our_client_with_a_bad_secret_gets_no_permission(acl_cluster) -> None:
    ns, _, _ = acl_cluster
    await create_topics(ns.addr, "Allowed")
    # retried on NO_PERMISSION as Java's producer does, then given up on with the reason
    with pytest.raises(MQClientError) as refused:
        async with Producer.open(ns.addr, "PG", credentials=WRONG_SECRET) as producer:
            await producer.send(Message("Allowed", b"x"))
    assert "answered code 16: org.apache.rocketmq.acl.common.AclException: Check signature " in str(
        refused.value
    )
