"""Whatever names a client sends, a broker opens, creates and removes files only under its
``storePathRootDir``: every request code the broker serves that carries a topic or a group is
sent with traversal attempts in each name, then the tree around the store is compared with a
snapshot taken before, and the broker must still serve. Names that could reach the filesystem
(topics, consumer groups) are refused with SYSTEM_ERROR; the others only ever key memory."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import attrs

from broker.config import load_broker_config
from broker.controller import BrokerController
from remoting import message as codec
from remoting import properties
from remoting.body import (
    CheckClientRequestBody,
    ConsumerData,
    HeartbeatData,
    LockBatchRequestBody,
    MessageQueue,
    ProducerData,
    SubscriptionData,
    SubscriptionGroupConfig,
)
from remoting.client import RemotingClient
from remoting.codes import CURRENT_VERSION, RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import encode_body
from tests.kits.brokerkit import broker_conf, call, pull_all, send_request, start_broker

C = RequestCode


@attrs.frozen
class Probe:
    code: int
    build: Callable[[str, dict[str, object]], RemotingCommand]
    refused: bool = True  # the name can reach the filesystem: SYSTEM_ERROR expected
    optional: bool = False  # an optional name: blank means none (Java's isBlank checks)


def fields(code: int, **values: object) -> RemotingCommand:
    request = RemotingCommand.request(code, {k: str(v) for k, v in values.items()})
    request.version = CURRENT_VERSION
    return request


def body(code: int, obj: object) -> RemotingCommand:
    return RemotingCommand.request(code, {}, encode_body(obj))


def heartbeat(group: str, topic: str) -> HeartbeatData:
    consumer = ConsumerData(group_name=group, subscription_data_set=[SubscriptionData(topic=topic)])
    return HeartbeatData(client_id="c@1", consumer_data_set=[consumer])


def lock(code: int, group: str, topic: str) -> RemotingCommand:
    mq = MessageQueue(topic=topic, broker_name="broker-a", queue_id=0)
    return body(code, LockBatchRequestBody(consumer_group=group, client_id="c@1", mq_set=[mq]))


def send(code: int, **changes: object) -> RemotingCommand:
    request = send_request("Fine", b"x", code=code)
    request.ext_fields.update({k: str(v) for k, v in changes.items()})
    return request


def offsets(code: int, group: str, topic: str, **more: object) -> RemotingCommand:
    return fields(code, consumerGroup=group, topic=topic, queueId=0, **more)


CREATE = {"defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}
PULL = {"queueId": 0, "queueOffset": 0, "maxMsgNums": 1, "sysFlag": 5, "commitOffset": 1}
PULL |= {"suspendTimeoutMillis": 0, "subVersion": 0, "subscription": "*"}
SEARCH = {"queueId": 0, "timestamp": 0}
POP = {"queueId": -1, "maxMsgNums": 1, "invisibleTime": 1000, "pollTime": 0, "bornTime": 0}
POP |= {"initMode": 0}
ACK = {"queueId": 0, "extraInfo": "0 1 1000 0 0 broker-a 0 0", "offset": 0}
QUERY = {"key": "k", "maxNum": 1, "beginTimestamp": 0, "endTimestamp": 2**40}

PROBES = [
    *(Probe(code, lambda n, _, c=code: send(c, b=n)) for code in (C.SEND_MESSAGE_V2, C.SEND_BATCH_MESSAGE)),
    *(Probe(code, lambda n, _, c=code: send(c, c=n, b="New" + str(len(n)))) for code in (C.SEND_MESSAGE_V2,)),
    *(Probe(code, lambda n, _, c=code: send(c, b=n)) for code in (C.SEND_REPLY_MESSAGE_V2,)),
    Probe(C.SEND_MESSAGE, lambda n, _: _v1_send(n)),
    Probe(C.SEND_REPLY_MESSAGE, lambda n, _: _v1_send(n, C.SEND_REPLY_MESSAGE)),
    Probe(C.CONSUMER_SEND_MSG_BACK, lambda n, s: fields(C.CONSUMER_SEND_MSG_BACK, offset=s["offset"], group=n, delayLevel=0)),
    Probe(C.CONSUMER_SEND_MSG_BACK, lambda n, s: fields(C.CONSUMER_SEND_MSG_BACK, offset=s["offset"], group=n, delayLevel=-1)),
    Probe(C.PULL_MESSAGE, lambda n, _: fields(C.PULL_MESSAGE, consumerGroup=n, topic="Fine", **PULL)),
    Probe(C.PULL_MESSAGE, lambda n, _: fields(C.PULL_MESSAGE, consumerGroup="G", topic=n, **PULL)),
    Probe(C.QUERY_MESSAGE, lambda n, _: fields(C.QUERY_MESSAGE, topic=n, **QUERY)),
    Probe(C.QUERY_CONSUMER_OFFSET, lambda n, _: offsets(C.QUERY_CONSUMER_OFFSET, n, "Fine")),
    Probe(C.QUERY_CONSUMER_OFFSET, lambda n, _: offsets(C.QUERY_CONSUMER_OFFSET, "G", n)),
    Probe(C.UPDATE_CONSUMER_OFFSET, lambda n, _: offsets(C.UPDATE_CONSUMER_OFFSET, n, "Fine", commitOffset=1)),
    Probe(C.UPDATE_CONSUMER_OFFSET, lambda n, _: offsets(C.UPDATE_CONSUMER_OFFSET, "G", n, commitOffset=1)),
    Probe(C.UPDATE_AND_CREATE_TOPIC, lambda n, _: fields(C.UPDATE_AND_CREATE_TOPIC, topic=n, **CREATE)),
    Probe(C.DELETE_TOPIC_IN_BROKER, lambda n, _: fields(C.DELETE_TOPIC_IN_BROKER, topic=n)),
    *(Probe(code, lambda n, _, c=code: fields(c, topic=n, **SEARCH)) for code in (C.SEARCH_OFFSET_BY_TIMESTAMP, C.GET_MAX_OFFSET, C.GET_MIN_OFFSET, C.GET_EARLIEST_MSG_STORETIME)),
    Probe(C.HEART_BEAT, lambda n, _: body(C.HEART_BEAT, heartbeat(n, "Fine"))),
    Probe(C.HEART_BEAT, lambda n, _: body(C.HEART_BEAT, heartbeat("G", n))),
    Probe(C.HEART_BEAT, lambda n, _: body(C.HEART_BEAT, HeartbeatData(client_id="c@1", producer_data_set=[ProducerData(group_name=n)])), refused=False),
    Probe(C.UNREGISTER_CLIENT, lambda n, _: fields(C.UNREGISTER_CLIENT, clientID="c@1", consumerGroup=n), optional=True),
    Probe(C.UNREGISTER_CLIENT, lambda n, _: fields(C.UNREGISTER_CLIENT, clientID="c@1", producerGroup=n), refused=False),
    Probe(C.END_TRANSACTION, lambda n, s: fields(C.END_TRANSACTION, producerGroup=n, tranStateTableOffset=0, commitLogOffset=s["offset"], commitOrRollback=8, msgId="x"), refused=False),
    Probe(C.GET_CONSUMER_LIST_BY_GROUP, lambda n, _: fields(C.GET_CONSUMER_LIST_BY_GROUP, consumerGroup=n)),
    Probe(C.LOCK_BATCH_MQ, lambda n, _: lock(C.LOCK_BATCH_MQ, n, "Fine")),
    Probe(C.LOCK_BATCH_MQ, lambda n, _: lock(C.LOCK_BATCH_MQ, "G", n)),
    Probe(C.UNLOCK_BATCH_MQ, lambda n, _: lock(C.UNLOCK_BATCH_MQ, n, "Fine")),
    Probe(C.CHECK_CLIENT_CONFIG, lambda n, _: body(C.CHECK_CLIENT_CONFIG, CheckClientRequestBody(group=n, subscription_data=SubscriptionData(topic=n))), refused=False),
    Probe(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, lambda n, _: body(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, SubscriptionGroupConfig(group_name=n))),
    Probe(C.DELETE_SUBSCRIPTIONGROUP, lambda n, _: fields(C.DELETE_SUBSCRIPTIONGROUP, groupName=n, removeOffset="true")),
    Probe(C.GET_TOPIC_STATS_INFO, lambda n, _: fields(C.GET_TOPIC_STATS_INFO, topic=n)),
    Probe(C.GET_CONSUME_STATS, lambda n, _: fields(C.GET_CONSUME_STATS, consumerGroup=n)),
    Probe(C.GET_CONSUME_STATS, lambda n, _: fields(C.GET_CONSUME_STATS, consumerGroup="G", topic=n), optional=True),
    Probe(C.GET_CONSUMER_CONNECTION_LIST, lambda n, _: fields(C.GET_CONSUMER_CONNECTION_LIST, consumerGroup=n)),
    Probe(C.GET_PRODUCER_CONNECTION_LIST, lambda n, _: fields(C.GET_PRODUCER_CONNECTION_LIST, producerGroup=n), refused=False),
    Probe(C.INVOKE_BROKER_TO_RESET_OFFSET, lambda n, _: fields(C.INVOKE_BROKER_TO_RESET_OFFSET, topic=n, group="G", timestamp=0)),
    Probe(C.INVOKE_BROKER_TO_RESET_OFFSET, lambda n, _: fields(C.INVOKE_BROKER_TO_RESET_OFFSET, topic="Fine", group=n, timestamp=0)),
    Probe(C.QUERY_TOPIC_CONSUME_BY_WHO, lambda n, _: fields(C.QUERY_TOPIC_CONSUME_BY_WHO, topic=n)),
    Probe(C.QUERY_CONSUME_TIME_SPAN, lambda n, _: fields(C.QUERY_CONSUME_TIME_SPAN, topic=n, group="G")),
    Probe(C.QUERY_CONSUME_TIME_SPAN, lambda n, _: fields(C.QUERY_CONSUME_TIME_SPAN, topic="Fine", group=n)),
    Probe(C.GET_CONSUMER_RUNNING_INFO, lambda n, _: fields(C.GET_CONSUMER_RUNNING_INFO, consumerGroup=n, clientId="c@1"), refused=False),
    Probe(C.CONSUME_MESSAGE_DIRECTLY, lambda n, _: fields(C.CONSUME_MESSAGE_DIRECTLY, consumerGroup=n, clientId="c@1", msgId="x"), refused=False),
    Probe(C.CLONE_GROUP_OFFSET, lambda n, _: fields(C.CLONE_GROUP_OFFSET, srcGroup="G", destGroup=n, topic="Fine")),
    Probe(C.CLONE_GROUP_OFFSET, lambda n, _: fields(C.CLONE_GROUP_OFFSET, srcGroup=n, destGroup="G2")),
    Probe(C.CLONE_GROUP_OFFSET, lambda n, _: fields(C.CLONE_GROUP_OFFSET, srcGroup="G", destGroup="G2", topic=n), optional=True),
    Probe(C.VIEW_BROKER_STATS_DATA, lambda n, _: fields(C.VIEW_BROKER_STATS_DATA, statsName="TOPIC_PUT_NUMS", statsKey=n), refused=False),
    Probe(C.QUERY_CONSUME_QUEUE, lambda n, _: fields(C.QUERY_CONSUME_QUEUE, topic=n, queueId=0, index=0, count=1)),
    Probe(C.POP_MESSAGE, lambda n, _: fields(C.POP_MESSAGE, consumerGroup=n, topic="Fine", **POP)),
    Probe(C.POP_MESSAGE, lambda n, _: fields(C.POP_MESSAGE, consumerGroup="G", topic=n, **POP)),
    Probe(C.ACK_MESSAGE, lambda n, _: fields(C.ACK_MESSAGE, consumerGroup=n, topic="Fine", **ACK)),
    Probe(C.ACK_MESSAGE, lambda n, _: fields(C.ACK_MESSAGE, consumerGroup="G", topic=n, **ACK)),
    Probe(C.CHANGE_MESSAGE_INVISIBLETIME, lambda n, _: fields(C.CHANGE_MESSAGE_INVISIBLETIME, consumerGroup=n, topic="Fine", invisibleTime=1, **ACK)),
    Probe(C.CHANGE_MESSAGE_INVISIBLETIME, lambda n, _: fields(C.CHANGE_MESSAGE_INVISIBLETIME, consumerGroup="G", topic=n, invisibleTime=1, **ACK)),
    Probe(C.NOTIFICATION, lambda n, _: fields(C.NOTIFICATION, consumerGroup=n, topic="Fine", queueId=-1, pollTime=0, bornTime=0)),
    Probe(C.NOTIFICATION, lambda n, _: fields(C.NOTIFICATION, consumerGroup="G", topic=n, queueId=-1, pollTime=0, bornTime=0)),
    Probe(C.GET_TOPIC_CONFIG, lambda n, _: fields(C.GET_TOPIC_CONFIG, topic=n)),
    Probe(C.PEEK_MESSAGE, lambda n, _: fields(C.PEEK_MESSAGE, consumerGroup=n, topic="Fine", queueId=-1, maxMsgNums=1)),
    Probe(C.PEEK_MESSAGE, lambda n, _: fields(C.PEEK_MESSAGE, consumerGroup="G", topic=n, queueId=-1, maxMsgNums=1)),
    Probe(C.QUERY_CONSUME_QUEUE, lambda n, _: fields(C.QUERY_CONSUME_QUEUE, topic="Fine", queueId=0, index=0, count=1, consumerGroup=n), optional=True),
    Probe(C.GET_SUBSCRIPTIONGROUP_CONFIG, lambda n, _: fields(C.GET_SUBSCRIPTIONGROUP_CONFIG, group=n)),
]  # fmt: skip
# Served, but no name in them.
NAMELESS = {
    C.GET_ALL_TOPIC_CONFIG, C.UPDATE_BROKER_CONFIG, C.GET_BROKER_CONFIG, C.GET_BROKER_RUNTIME_INFO,
    C.VIEW_MESSAGE_BY_ID, C.GET_ALL_CONSUMER_OFFSET, C.GET_ALL_DELAY_OFFSET,
    C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, C.GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
    C.GET_BROKER_CONSUME_STATS,
    # store maintenance: what they remove is found on disk, not named by the request
    C.CLEAN_EXPIRED_CONSUMEQUEUE, C.CLEAN_UNUSED_TOPIC, C.DELETE_EXPIRED_COMMITLOG,
    C.GET_ALL_PRODUCER_INFO,
    # ACL administration: account names live inside plain_acl.yml; a file named by
    # UPDATE_GLOBAL_WHITE_ADDRS_CONFIG must be one the broker loaded (tests/unit/acl)
    C.UPDATE_AND_CREATE_ACL_CONFIG, C.DELETE_ACL_CONFIG, C.GET_BROKER_CLUSTER_ACL_INFO,
    C.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, C.GET_BROKER_CLUSTER_ACL_CONFIG,
    # a slave's timer sync; auto-failover's promise (epoch and member ids only)
    C.GET_TIMER_CHECK_POINT, C.CONTROLLER_PROMISE,
}  # fmt: skip


def _v1_send(name: str, code: int = C.SEND_MESSAGE) -> RemotingCommand:
    request = send_request("Fine", b"x", code=C.SEND_MESSAGE)
    request.code = code
    request.ext_fields["topic"] = name
    return request


def traversals(world: Path) -> list[str]:
    return [
        *("../" * depth + "escape" for depth in range(1, 6)),
        "..", ".", "../../sentinel/empty", "%RETRY%../../../../escape-r", "%DLQ%..",
        "x/../../../escape-x", f"{world}/abs", "a/b", "x\x00y", "é", "T" * 300, "G" * 256,
        "..\\..\\escape-b", "T\n", "",
    ]  # fmt: skip


def snapshot(root: Path, *skip: Path) -> dict[str, str]:
    """Every path under ``root`` but the ``skip`` subtrees: a content hash, or 'dir'."""
    out = {}
    for directory, dirs, files in os.walk(root):
        here = Path(directory)
        dirs[:] = [d for d in dirs if here / d not in skip]
        out[str(here.relative_to(root))] = "dir"
        for name in files:
            out[str((here / name).relative_to(root))] = hashlib.sha1(
                (here / name).read_bytes()
            ).hexdigest()
    return out


def served_codes(conf: Path) -> set[int]:
    props = properties.load(str(conf))
    config, store_config = load_broker_config(props)
    controller = BrokerController(config, store_config)
    return set(controller.server.processors)


async def test_no_name_reaches_outside_the_store(processes, tmp_path) -> None:
    world = tmp_path / "world"
    store = world / "store"
    (world / "sentinel" / "empty").mkdir(parents=True)
    (world / "sentinel" / "data.txt").write_text("keep me")
    conf = broker_conf(tmp_path, storePathRootDir=store, autoCreateSubscriptionGroup="true")
    assert served_codes(conf) - NAMELESS == {p.code for p in PROBES}
    broker = start_broker(processes, conf)
    logs = broker.log_path.parent
    before = snapshot(tmp_path, store, logs)
    async with RemotingClient.open() as client:
        sent = await call(client, broker.addr, send_request("Fine", b"first"))
        state = {"offset": codec.decode_offset_msg_id(sent.ext("msgId")).phys_offset}
        for name in traversals(world):
            for probe in PROBES:
                response = await call(client, broker.addr, probe.build(name, state))
                if probe.refused and not (probe.optional and name == ""):
                    assert response.code == ResponseCode.SYSTEM_ERROR, (probe, name, response)
        assert (await call(client, broker.addr, send_request("Fine", b"last"))).code == 0
        assert [m.body for m in await pull_all(client, broker.addr, "Fine", 0)][-1] == b"last"
    assert broker.terminate() == 0
    assert snapshot(tmp_path, store, logs) == before
    assert "Traceback" not in broker.log_path.read_text(errors="replace")
