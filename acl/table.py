"""What every request code needs (docs/spec/remoting.md §8): the one table the ACL check reads.

``PUBLIC``: no credentials (the NameServer's reads, so clients without accounts find routes).
``SIGNED``: any account with a valid signature, Java's default for a code it does not list.
``RESOURCES``: signed, and the account may use the topics and groups the request names, found
as Java's PlainAccessValidator.parse finds them (a group is its retry topic ``%RETRY%group``).
``ADMIN``: signed by an admin account.

Where we ask more than RocketMQ 4.9.8 does (it lists five admin codes and no resources for a
batch send, a reply, a query of offsets, a queue lock or a look-up by message id):
* admin-only besides topic/group create and delete and UPDATE_BROKER_CONFIG: the broker's
  config read, offset resets and clones, file and queue cleaning, ACL administration (Java
  lets any account create an admin account), direct consumption, half-message resumption,
  consumer suspension, filter servers, and the NameServer's writes (ours: Java's NameServer
  has no ACL);
* SEND_BATCH_MESSAGE and replies need PUB on their topic; a send to ``%RETRY%group`` needs SUB
  on that group (Java reads a ``group`` field that SEND_MESSAGE does not have, and for V2 the
  producer group, so it checks nothing useful);
* QUERY_CONSUMER_OFFSET needs what UPDATE_CONSUMER_OFFSET needs; LOCK/UNLOCK_BATCH_MQ need SUB
  on their group; VIEW_MESSAGE_BY_ID needs SUB on the topic of the message it names.
A code missing here is treated as ADMIN (tests/unit/acl check that none is missing).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from acl.errors import FRAME_PARSE, Refusal
from acl.permission import PUB, SUB
from remoting import constants as K
from remoting import fastjson
from remoting.codes import RequestCode as R
from remoting.command import RemotingCommand
from remoting.errors import RemoteProtocolError


class Access(enum.Enum):
    PUBLIC = "public"
    SIGNED = "signed"
    RESOURCES = "resources"
    ADMIN = "admin"


class MessageLookup(Protocol):
    def topic_at(self, phys_offset: int) -> str | None:
        """The topic of the message stored at a CommitLog offset, None if there is none."""


Resources = list[tuple[str, int]]
Extractor = Callable[[RemotingCommand, MessageLookup | None], Resources]


@attrs.frozen
class Rule:
    access: Access
    resources: Extractor | None = None


def _ext(request: RemotingCommand, name: str) -> str | None:
    fields = request.ext_fields
    return None if fields is None else fields.get(name)


def _group(name: str | None) -> list[tuple[str, int]]:
    return [] if name is None else [(K.retry_topic(name), SUB)]


def _sent_to(topic: str | None) -> Resources:
    if topic is None:
        return []
    # A retry topic is its group's: sending to it is the consumer's send-back.
    return [(topic, SUB if topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX) else PUB)]


def _send_v1(request: RemotingCommand, lookup: Any) -> Resources:
    return _sent_to(_ext(request, "topic"))


def _send_v2(request: RemotingCommand, lookup: Any) -> Resources:
    return _sent_to(_ext(request, "b"))


def _send_back(request: RemotingCommand, lookup: Any) -> Resources:
    return _group(_ext(request, "group"))


def _topic_sub(request: RemotingCommand, lookup: Any) -> Resources:
    topic = _ext(request, "topic")
    return [] if topic is None else [(topic, SUB)]


def _topic_and_group(request: RemotingCommand, lookup: Any) -> Resources:
    return _topic_sub(request, lookup) + _group(_ext(request, "consumerGroup"))


def _popped(request: RemotingCommand, lookup: Any) -> Resources:
    """5.x pop, ack and change of invisible time: SUB on the topic and the group, as a pull.
    An ack may name the group's pop retry topic ``%RETRY%<group>_<topic>``: that is the
    group's, so SUB on the group covers it (RocketMQ 5's ACL 1.0 checks no pop code)."""
    group = _ext(request, "consumerGroup")
    topic = _ext(request, "topic")
    if group is not None and topic is not None:
        prefix = f"{K.RETRY_GROUP_TOPIC_PREFIX}{group}_"
        if topic.startswith(prefix):
            return _group(group)
    return _topic_and_group(request, lookup)


def _consumer_group(request: RemotingCommand, lookup: Any) -> Resources:
    return _group(_ext(request, "consumerGroup"))


def _json_body(request: RemotingCommand, what: str) -> dict[str, Any]:
    try:
        data = fastjson.loads(request.body)
    except RemoteProtocolError as exc:
        raise BodyError(f"{what} body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BodyError(f"{what} body is not a JSON object")
    return data


def _heartbeat(request: RemotingCommand, lookup: Any) -> Resources:
    out: Resources = []
    for consumer in _json_body(request, "heartbeat").get("consumerDataSet") or ():
        if not isinstance(consumer, dict):
            raise BodyError("heartbeat consumerDataSet holds a non-object")
        group = consumer.get("groupName")
        out += _group(group if isinstance(group, str) else None)
        for sub in consumer.get("subscriptionDataSet") or ():
            topic = sub.get("topic") if isinstance(sub, dict) else None
            if isinstance(topic, str):
                out.append((topic, SUB))
    return out


def _queue_lock(request: RemotingCommand, lookup: Any) -> Resources:
    group = _json_body(request, "lock").get("consumerGroup")
    return _group(group if isinstance(group, str) else None)


def _viewed(request: RemotingCommand, lookup: MessageLookup | None) -> Resources:
    text = _ext(request, "offset")
    if lookup is None or text is None or not text.lstrip("-").isdigit():
        return []  # the processor refuses the header
    topic = lookup.topic_at(int(text))
    return [] if topic is None else [(topic, SUB)]


class BodyError(ValueError):
    """A body the ACL must read to find resources, and cannot."""

    def refusal(self) -> Refusal:
        return Refusal(str(self), FRAME_PARSE)


PUBLIC, SIGNED, ADMIN = Rule(Access.PUBLIC), Rule(Access.SIGNED), Rule(Access.ADMIN)


def _needs(extractor: Extractor) -> Rule:
    return Rule(Access.RESOURCES, extractor)


RULES: dict[int, Rule] = {
    # -- sends and consumption (client -> broker)
    R.SEND_MESSAGE: _needs(_send_v1),
    R.SEND_MESSAGE_V2: _needs(_send_v2),
    R.SEND_BATCH_MESSAGE: _needs(_send_v2),
    R.SEND_REPLY_MESSAGE: _needs(_send_v1),
    R.SEND_REPLY_MESSAGE_V2: _needs(_send_v2),
    R.CONSUMER_SEND_MSG_BACK: _needs(_send_back),
    R.PULL_MESSAGE: _needs(_topic_and_group),
    R.POP_MESSAGE: _needs(_popped),
    R.PEEK_MESSAGE: _needs(_popped),
    R.ACK_MESSAGE: _needs(_popped),
    R.CHANGE_MESSAGE_INVISIBLETIME: _needs(_popped),
    R.NOTIFICATION: _needs(_popped),
    R.POLLING_INFO: _needs(_popped),
    R.BATCH_ACK_MESSAGE: ADMIN,  # not served (its body names the groups)
    # a broker's own account signs it; a promise can only delay an election, never make one
    R.CONTROLLER_PROMISE: SIGNED,
    R.QUERY_MESSAGE: _needs(_topic_sub),
    R.VIEW_MESSAGE_BY_ID: _needs(_viewed),
    R.HEART_BEAT: _needs(_heartbeat),
    R.UNREGISTER_CLIENT: _needs(_consumer_group),
    R.GET_CONSUMER_LIST_BY_GROUP: _needs(_consumer_group),
    R.UPDATE_CONSUMER_OFFSET: _needs(_topic_and_group),
    R.QUERY_CONSUMER_OFFSET: _needs(_topic_and_group),
    R.LOCK_BATCH_MQ: _needs(_queue_lock),
    R.UNLOCK_BATCH_MQ: _needs(_queue_lock),
    R.END_TRANSACTION: SIGNED,
    R.CHECK_CLIENT_CONFIG: SIGNED,
    R.SEARCH_OFFSET_BY_TIMESTAMP: SIGNED,
    R.GET_MAX_OFFSET: SIGNED,
    R.GET_MIN_OFFSET: SIGNED,
    R.GET_EARLIEST_MSG_STORETIME: SIGNED,
    R.QUERY_BROKER_OFFSET: SIGNED,
    # -- broker -> client (a broker never serves them; a client answers them)
    R.CHECK_TRANSACTION_STATE: SIGNED,
    R.NOTIFY_CONSUMER_IDS_CHANGED: SIGNED,
    R.RESET_CONSUMER_CLIENT_OFFSET: SIGNED,
    R.GET_CONSUMER_STATUS_FROM_CLIENT: SIGNED,
    R.PUSH_REPLY_MESSAGE_TO_CLIENT: SIGNED,
    # -- broker reads (admin tools, consoles, a slave syncing from its master)
    R.GET_ALL_TOPIC_CONFIG: SIGNED,
    R.GET_TOPIC_CONFIG_LIST: SIGNED,
    R.GET_TOPIC_NAME_LIST: SIGNED,
    R.GET_BROKER_RUNTIME_INFO: SIGNED,
    R.GET_ALL_CONSUMER_OFFSET: SIGNED,
    R.GET_ALL_DELAY_OFFSET: SIGNED,
    R.GET_TIMER_CHECK_POINT: SIGNED,  # 5.x: a slave copies its master's timer progress
    R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: SIGNED,
    R.GET_TOPIC_STATS_INFO: SIGNED,
    R.GET_TOPIC_CONFIG: SIGNED,  # 5.x: the Proxy reads a topic's message type
    R.GET_SUBSCRIPTIONGROUP_CONFIG: SIGNED,  # 5.x: the Proxy reads a group's consumeMessageOrderly
    R.GET_CONSUMER_CONNECTION_LIST: SIGNED,
    R.GET_PRODUCER_CONNECTION_LIST: SIGNED,
    R.GET_CONSUME_STATS: SIGNED,
    R.WHO_CONSUME_THE_MESSAGE: SIGNED,
    R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: SIGNED,
    R.QUERY_TOPIC_CONSUME_BY_WHO: SIGNED,
    R.QUERY_CONSUME_TIME_SPAN: SIGNED,
    R.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: SIGNED,
    R.GET_CONSUMER_RUNNING_INFO: SIGNED,
    R.QUERY_CORRECTION_OFFSET: SIGNED,
    R.VIEW_BROKER_STATS_DATA: SIGNED,
    R.GET_BROKER_CONSUME_STATS: SIGNED,
    R.QUERY_CONSUME_QUEUE: SIGNED,
    R.GET_ALL_PRODUCER_INFO: SIGNED,
    # -- broker changes (RocketMQ's five admin codes first)
    R.UPDATE_AND_CREATE_TOPIC: ADMIN,
    R.UPDATE_BROKER_CONFIG: ADMIN,
    R.DELETE_TOPIC_IN_BROKER: ADMIN,
    R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: ADMIN,
    R.DELETE_SUBSCRIPTIONGROUP: ADMIN,
    R.GET_BROKER_CONFIG: ADMIN,
    R.TRIGGER_DELETE_FILES: ADMIN,
    R.UPDATE_AND_CREATE_ACL_CONFIG: ADMIN,
    R.DELETE_ACL_CONFIG: ADMIN,
    R.GET_BROKER_CLUSTER_ACL_INFO: ADMIN,
    R.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: ADMIN,
    R.GET_BROKER_CLUSTER_ACL_CONFIG: ADMIN,
    R.SUSPEND_CONSUMER: ADMIN,
    R.RESUME_CONSUMER: ADMIN,
    R.RESET_CONSUMER_OFFSET_IN_CONSUMER: ADMIN,
    R.RESET_CONSUMER_OFFSET_IN_BROKER: ADMIN,
    R.ADJUST_CONSUMER_THREAD_POOL: ADMIN,
    R.INVOKE_BROKER_TO_RESET_OFFSET: ADMIN,
    R.REGISTER_FILTER_SERVER: ADMIN,
    R.REGISTER_MESSAGE_FILTER_CLASS: ADMIN,
    R.CLEAN_EXPIRED_CONSUMEQUEUE: ADMIN,
    R.CONSUME_MESSAGE_DIRECTLY: ADMIN,
    R.CLONE_GROUP_OFFSET: ADMIN,
    R.CLEAN_UNUSED_TOPIC: ADMIN,
    R.RESUME_CHECK_HALF_MESSAGE: ADMIN,
    R.DELETE_EXPIRED_COMMITLOG: ADMIN,
    # -- NameServer writes (brokers register with an admin account) and reads
    R.PUT_KV_CONFIG: ADMIN,
    R.DELETE_KV_CONFIG: ADMIN,
    R.REGISTER_BROKER: ADMIN,
    R.UNREGISTER_BROKER: ADMIN,
    R.QUERY_DATA_VERSION: ADMIN,  # it also keeps a broker's registration alive
    R.WIPE_WRITE_PERM_OF_BROKER: ADMIN,
    R.ADD_WRITE_PERM_OF_BROKER: ADMIN,
    R.DELETE_TOPIC_IN_NAMESRV: ADMIN,
    R.UPDATE_NAMESRV_CONFIG: ADMIN,
    R.GET_KV_CONFIG: PUBLIC,
    R.GET_KVLIST_BY_NAMESPACE: PUBLIC,
    R.GET_ROUTEINFO_BY_TOPIC: PUBLIC,
    R.GET_BROKER_CLUSTER_INFO: PUBLIC,
    R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: PUBLIC,
    R.GET_TOPICS_BY_CLUSTER: PUBLIC,
    R.GET_SYSTEM_TOPIC_LIST_FROM_NS: PUBLIC,
    R.GET_UNIT_TOPIC_LIST: PUBLIC,
    R.GET_HAS_UNIT_SUB_TOPIC_LIST: PUBLIC,
    R.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: PUBLIC,
    R.GET_NAMESRV_CONFIG: PUBLIC,
}


def rule_for(code: int) -> Rule:
    return RULES.get(code, ADMIN)
