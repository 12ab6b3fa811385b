"""SendMessage's pure half: a ``apache.rocketmq.v2.Message`` checked and turned into what a
broker stores (properties, sysflag, body), and the queue a send goes to. RocketMQ 5's
SendMessageActivity and its SendMessageQueueSelector decide the same things; each refusal is
the Code it answers with."""

from __future__ import annotations

import unicodedata

import attrs
from google.protobuf import timestamp_pb2

from proxy.apis import definition_pb2 as pb
from proxy.config import ProxyConfig
from proxy.errors import ProxyError
from remoting import constants as K
from remoting import names
from remoting.java_hash import java_string_hash
from remoting.message import COMPRESSED_FLAG, TRANSACTION_PREPARED_TYPE

# MessageConst (5.x) names the proxy writes
SHARDING_KEY = "__SHARDINGKEY"
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TRACE_CONTEXT = "TRACE_CONTEXT"
BORN_HOST = "__BORNHOST"
BORN_TIMESTAMP = "BORN_TIMESTAMP"
DELAY_LEVEL = "DELAY"

# MessageConst.STRING_HASH_SET: names a user property may not take.
RESERVED_PROPERTIES = frozenset(
    [
        "TRACE_ON",
        "MSG_REGION",
        "KEYS",
        "TAGS",
        "WAIT",
        "DELAY",
        "RETRY_TOPIC",
        "REAL_TOPIC",
        "REAL_QID",
        "TRAN_MSG",
        "PGROUP",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "BUYER_ID",
        "ORIGIN_MESSAGE_ID",
        "TRANSFER_FLAG",
        "CORRECTION_FLAG",
        "MQ2_FLAG",
        "RECONSUME_TIME",
        "UNIQ_KEY",
        "MAX_RECONSUME_TIMES",
        "CONSUME_START_TIME",
        "POP_CK",
        "POP_CK_OFFSET",
        "1ST_POP_TIME",
        "TRAN_PREPARED_QUEUE_OFFSET",
        "DUP_INFO",
        "EXTEND_UNIQ_INFO",
        "INSTANCE_ID",
        "CORRELATION_ID",
        "REPLY_TO_CLIENT",
        "TTL",
        "ARRIVE_TIME",
        "PUSH_REPLY_TIME",
        "CLUSTER",
        "MSG_TYPE",
        "INNER_MULTI_QUEUE_OFFSET",
        "TIMER_DELAY_MS",
        "TIMER_DELAY_SEC",
        "TIMER_DELIVER_MS",
        "TIMER_ENQUEUE_MS",
        "TIMER_DEQUEUE_MS",
        "TIMER_ROLL_TIMES",
        "TIMER_OUT_MS",
        "TIMER_DEL_UNIQKEY",
        "TIMER_DELAY_LEVEL",
        "__BORNHOST",
        "BORN_TIMESTAMP",
        "DLQ_ORIGIN_TOPIC",
        "DLQ_ORIGIN_MESSAGE_ID",
        "__CRC32#",
    ]
)

Code = pb.Code


@attrs.frozen
class OutgoingMessage:
    """One message as the broker gets it: SEND_MESSAGE_V2's properties and body."""

    message_id: str
    properties: dict[str, str]
    body: bytes
    born_timestamp_ms: int


@attrs.frozen
class SendPlan:
    topic: str
    sys_flag: int
    producer_group: str  # the topic: RocketMQ's Proxy names the producer group so
    messages: list[OutgoingMessage]
    sharding_key: str | None  # a single message's group: it picks the queue
    transactional: bool
    message_type: str  # TopicMessageType.parseFromMessageProperty of the first message


def has_control_character(text: str) -> bool:
    """Java's Character.isISOControl over the string (U+0000-U+001F, U+007F-U+009F)."""
    return any(unicodedata.category(c) == "Cc" for c in text)


def validate_topic(resource: pb.Resource) -> str:
    name = resource.name
    if not name:
        raise ProxyError(Code.ILLEGAL_TOPIC, "topic name cannot be empty")
    problem = names.topic_problem(name)
    if problem is not None:
        raise ProxyError(Code.ILLEGAL_TOPIC, problem)
    if K.is_system_topic(name):
        raise ProxyError(Code.ILLEGAL_TOPIC, f"cannot access system topic: {name}")
    return name


def _validate_tag(tag: str) -> None:
    if tag and not tag.strip():
        raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
    if "|" in tag:
        raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    if has_control_character(tag):
        raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")


def _validate_key(key: str) -> None:
    if key and not key.strip():
        raise ProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
    if has_control_character(key):
        raise ProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")


def _validate_group(group: str, config: ProxyConfig) -> None:
    if not group.strip():
        raise ProxyError(
            Code.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace"
        )
    limit = config.max_message_group_size
    if limit > 0 and len(group.encode()) >= limit:
        raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP, f"message group exceed the max size {limit}")
    if has_control_character(group):
        raise ProxyError(
            Code.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character"
        )


def _validate_body(body: bytes, config: ProxyConfig) -> None:
    if config.enable_message_body_empty_check and not body:
        raise ProxyError(Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    limit = config.max_message_size
    if limit > 0 and len(body) > limit:
        raise ProxyError(Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {limit}")


def _user_properties(message: pb.Message, config: ProxyConfig) -> tuple[dict[str, str], int]:
    user = dict(message.user_properties)
    if len(user) > config.user_property_max_num:
        raise ProxyError(
            Code.MESSAGE_PROPERTIES_TOO_LARGE,
            f"too many user properties, max is {config.user_property_max_num}",
        )
    size = 0
    for key, value in user.items():
        if key in RESERVED_PROPERTIES:
            raise ProxyError(
                Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}"
            )
        if has_control_character(key) or has_control_character(value):
            raise ProxyError(
                Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                "the key or value of a property cannot contain control character",
            )
        if not key or not value:
            # the stored properties string cannot hold an empty name or value (it would not
            # read back), so a property must have both
            raise ProxyError(
                Code.ILLEGAL_MESSAGE_PROPERTY_KEY, "property key and value cannot be empty"
            )
        size += len(key.encode()) + len(value.encode())
    return user, size


# google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z
_MIN_SECONDS, _MAX_SECONDS = -62_135_596_800, 253_402_300_799


def valid_timestamp(stamp: timestamp_pb2.Timestamp) -> bool:
    """Timestamps.isValid: an SDK may send anything in the two fields."""
    return _MIN_SECONDS <= stamp.seconds <= _MAX_SECONDS and 0 <= stamp.nanos < 1_000_000_000


def declared_type(properties: dict[str, str]) -> int:
    """TopicMessageType.parseFromMessageProperty: what the properties make the message."""
    if properties.get("TRAN_MSG") == "true":
        return pb.MessageType.TRANSACTION
    if DELAY_LEVEL in properties or TIMER_DELIVER_MS in properties:
        return pb.MessageType.DELAY
    if SHARDING_KEY in properties:
        return pb.MessageType.FIFO
    return pb.MessageType.NORMAL


def delay_level(deliver_at_ms: int, now_ms: int, levels_ms: list[int]) -> int:
    """ProxyConfig.computeDelayLevel: the first level (by delay) longer than the wait, else
    the longest."""
    wait = deliver_at_ms - now_ms
    ordered = sorted(range(len(levels_ms)), key=lambda i: levels_ms[i])
    for index in ordered:
        if levels_ms[index] > wait:
            return index + 1
    return ordered[-1] + 1


def _transaction_properties(
    system: pb.SystemProperties, props: dict[str, str], config: ProxyConfig
) -> None:
    if system.message_type != pb.MessageType.TRANSACTION:
        return
    props["TRAN_MSG"] = "true"
    if system.HasField("orphaned_transaction_recovery_duration"):
        seconds = system.orphaned_transaction_recovery_duration.seconds
        limit = config.max_transaction_recovery_second
        if limit > 0 and seconds > limit:
            raise ProxyError(
                Code.BAD_REQUEST,
                f"the max transaction recovery time of message is too large, max is {limit}",
            )
        props["CHECK_IMMUNITY_TIME_IN_SECONDS"] = str(max(0, seconds))


def _delivery_properties(
    system: pb.SystemProperties, props: dict[str, str], config: ProxyConfig, now_ms: int
) -> None:
    """fillDelayMessageProperty: the delivery time for the broker's timers."""
    if not system.HasField("delivery_timestamp"):
        return
    if not valid_timestamp(system.delivery_timestamp):
        raise ProxyError(Code.ILLEGAL_DELIVERY_TIME, "delivery timestamp is not a valid time")
    deliver_ms = system.delivery_timestamp.ToMilliseconds()
    limit = config.max_delay_time_mills
    if limit > 0 and deliver_ms - now_ms > limit:
        raise ProxyError(
            Code.ILLEGAL_DELIVERY_TIME,
            f"the max delay time of message is too large, max is {limit}",
        )
    if config.use_delay_level:
        props[DELAY_LEVEL] = str(delay_level(deliver_ms, now_ms, config.delay_levels_ms))
    props[TIMER_DELIVER_MS] = str(deliver_ms)


def message_properties(
    message: pb.Message, producer_group: str, config: ProxyConfig, peer: str, now_ms: int
) -> dict[str, str]:
    """SendMessageActivity.buildMessageProperty, check by check, in its order."""
    system = message.system_properties
    props, size = _user_properties(message, config)
    _validate_tag(system.tag)
    if system.tag:
        props["TAGS"] = system.tag
        size += len(system.tag.encode())
    for key in system.keys:
        _validate_key(key)
        size += len(key.encode())
    if system.keys:
        props["KEYS"] = " ".join(system.keys)
    if size > config.max_user_property_size:
        raise ProxyError(
            Code.MESSAGE_PROPERTIES_TOO_LARGE,
            f"the total size of user property is too large, max is {config.max_user_property_size}",
        )
    if not system.message_id.strip():
        raise ProxyError(Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    if has_control_character(system.message_id) or len(system.message_id) > 128:
        raise ProxyError(Code.ILLEGAL_MESSAGE_ID, "message id is malformed")
    props["UNIQ_KEY"] = system.message_id
    _transaction_properties(system, props, config)
    _delivery_properties(system, props, config, now_ms)
    props["RECONSUME_TIME"] = str(max(0, system.delivery_attempt))
    props["PGROUP"] = producer_group
    if system.HasField("message_group") and system.message_group:
        _validate_group(system.message_group, config)
        props[SHARDING_KEY] = system.message_group
    if system.HasField("trace_context") and system.trace_context:
        if has_control_character(system.trace_context):
            raise ProxyError(Code.BAD_REQUEST, "trace context cannot contain control character")
        props[TRACE_CONTEXT] = system.trace_context
    born_host = system.born_host.strip() or peer
    if born_host and not has_control_character(born_host):
        props[BORN_HOST] = born_host
    if system.HasField("born_timestamp") and valid_timestamp(system.born_timestamp):
        props[BORN_TIMESTAMP] = str(system.born_timestamp.ToMilliseconds())
    return props


def plan_send(messages: list[pb.Message], config: ProxyConfig, peer: str, now_ms: int) -> SendPlan:
    """SendMessageActivity.sendMessage up to the broker call: every check, every property."""
    if not messages:
        raise ProxyError(Code.MESSAGE_CORRUPTED, "no message to send")
    first = messages[0]
    topic = validate_topic(first.topic)
    outgoing = []
    for message in messages:
        if message.topic != first.topic:
            raise ProxyError(Code.MESSAGE_CORRUPTED, "topic in message is not same")
        _validate_body(message.body, config)
        props = message_properties(message, topic, config, peer, now_ms)
        born = int(props.get(BORN_TIMESTAMP, now_ms))
        outgoing.append(
            OutgoingMessage(message.system_properties.message_id, props, message.body, born)
        )
    sys_flag = 0
    if first.system_properties.body_encoding == pb.Encoding.GZIP:
        sys_flag |= COMPRESSED_FLAG
    transactional = first.system_properties.message_type == pb.MessageType.TRANSACTION
    if transactional:
        sys_flag |= TRANSACTION_PREPARED_TYPE
    sharding = first.system_properties.message_group if len(messages) == 1 else ""
    kind = pb.MessageType.Name(declared_type(outgoing[0].properties))
    return SendPlan(topic, sys_flag, topic, outgoing, sharding or None, transactional, kind)


# ------------------------------------------------------------------ queue choice


def consistent_hash(key: int, buckets: int) -> int:
    """Guava's Hashing.consistentHash(long, int): the bucket of ``key``, moving as few keys as
    possible when ``buckets`` changes (RocketMQ's Proxy picks a FIFO group's queue with it)."""
    assert buckets > 0
    state = key & 0xFFFFFFFFFFFFFFFF
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & 0xFFFFFFFFFFFFFFFF
        as_int = state >> 33
        if as_int >= 1 << 31:
            as_int -= 1 << 32
        next_double = (as_int + 1) / 2.0**31
        following = int((candidate + 1) / next_double)
        if 0 <= following < buckets:
            candidate = following
        else:
            return candidate


def fifo_queue_index(message_group: str, queue_count: int) -> int:
    """The write queue (by position in the sorted write queues) a message group goes to."""
    return consistent_hash(java_string_hash(message_group), queue_count)
