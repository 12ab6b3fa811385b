"""JSON bodies shared by the NameServer, the broker and the clients (docs/spec/remoting.md §9, §10).

attrs classes with snake_case fields; ``serde.decode_body`` / ``serde.encode_body`` handle the
camelCase names and fastjson's dialect. Collections default to empty because clients omit them.
Fields a broker stores or builds paths from carry their Java type and range
(remoting.wire_types), which ``serde.check_body`` applies to a request's body; files written by
a Java broker load without them.
"""

from __future__ import annotations

import enum
import time

import attrs

from remoting import fastjson, serde
from remoting.constants import PERM_READ, PERM_WRITE
from remoting.wire_types import (
    Group,
    Int,
    Long,
    NonNegLong,
    Perm,
    RegisteredQueueNums,
    RetryQueueNums,
    Topic,
)

frozen = attrs.frozen(kw_only=True)
mutable = attrs.define(kw_only=True)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class TopicFilterType(enum.Enum):
    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


# Definition order is the Java ordinal: the C++ client sends these enums as integers.
class ConsumeType(enum.Enum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"
    CONSUME_POP = "CONSUME_POP"  # 5.x: the Proxy's heartbeats for SimpleConsumer groups


class MessageModel(enum.Enum):
    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.Enum):
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


# ------------------------------------------------------------------------- shared shapes


@frozen
class DataVersion:
    counter: int = 0
    timestamp: int = 0
    # RocketMQ 5: in controller mode a broker's master epoch; a NameServer keeps a master
    # registration of a lower one from replacing the live master's (namesrv/route_info.py).
    # Sent only when set, so 4.x peers see the DataVersion they know.
    state_version: NonNegLong | None = None

    def next_version(self) -> DataVersion:
        return DataVersion(
            counter=self.counter + 1, timestamp=now_ms(), state_version=self.state_version
        )


@frozen
class TopicConfig:
    topic_name: str  # a broker's own topics (its cluster's, its name) follow no name rule
    read_queue_nums: RegisteredQueueNums = 16
    write_queue_nums: RegisteredQueueNums = 16
    perm: Perm = PERM_READ | PERM_WRITE
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: Int = 0
    order: bool = False
    # 5.x topic attributes ({"message.type": "FIFO"}); absent on a topic without any
    attributes: dict[str, str] | None = None


@frozen
class TopicConfigSerializeWrapper:
    topic_config_table: dict[str, TopicConfig] = attrs.Factory(dict)
    data_version: DataVersion = attrs.Factory(DataVersion)


@frozen
class RegisterBrokerBody:
    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = attrs.Factory(
        TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = attrs.Factory(list)


@attrs.frozen(kw_only=True, order=True)
class MessageQueue:
    topic: Topic
    broker_name: str
    queue_id: Int

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"


@frozen
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@frozen
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = attrs.Factory(dict)


@frozen
class TopicRouteData:
    queue_datas: list[QueueData] = attrs.Factory(list)
    broker_datas: list[BrokerData] = attrs.Factory(list)
    filter_server_table: dict[str, list[str]] = attrs.Factory(dict)
    order_topic_conf: str | None = None


@frozen
class ClusterInfo:
    broker_addr_table: dict[str, BrokerData] = attrs.Factory(dict)
    cluster_addr_table: dict[str, set[str]] = attrs.Factory(dict)


@frozen
class TopicList:
    topic_list: list[str] = attrs.Factory(list)
    broker_addr: str | None = None


@frozen
class GroupList:
    group_list: list[str] = attrs.Factory(list)


@frozen
class KVTable:
    table: dict[str, str] = attrs.Factory(dict)


# ------------------------------------------------------------------------- clients


@frozen
class SubscriptionData:
    topic: Topic
    sub_string: str = "*"
    tags_set: set[str] = attrs.Factory(set)
    code_set: set[int] = attrs.Factory(set)
    sub_version: Long = 0
    expression_type: str = "TAG"
    class_filter_mode: bool = False


@frozen
class ConsumerData:
    group_name: Group
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    subscription_data_set: list[SubscriptionData] = attrs.Factory(list)
    unit_mode: bool = False


@frozen
class ProducerData:
    group_name: str


@frozen
class HeartbeatData:
    client_id: str = attrs.field(metadata={"wire": "clientID"})
    producer_data_set: list[ProducerData] = attrs.Factory(list)
    consumer_data_set: list[ConsumerData] = attrs.Factory(list)


@frozen
class LockBatchRequestBody:
    consumer_group: Group
    client_id: str
    mq_set: list[MessageQueue] = attrs.Factory(list)


UnlockBatchRequestBody = LockBatchRequestBody


@frozen
class LockBatchResponseBody:
    lock_ok_mq_set: list[MessageQueue] = attrs.field(factory=list, metadata={"wire": "lockOKMQSet"})


@frozen
class GetConsumerListByGroupResponseBody:
    consumer_id_list: list[str] = attrs.Factory(list)


@frozen
class CheckClientRequestBody:
    client_id: str | None = None
    group: str | None = None
    subscription_data: SubscriptionData | None = None


@frozen
class Connection:
    client_id: str
    client_addr: str
    language: str = "JAVA"
    version: int = 0


@frozen
class ConsumerConnection:
    connection_set: list[Connection] = attrs.Factory(list)
    subscription_table: dict[str, SubscriptionData] = attrs.Factory(dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
    # Not in Java's body (its readers ignore unknown keys): each member's subscriptions
    # (topic -> expression), present only when members of the group disagree.
    inconsistent_subscriptions: dict[str, dict[str, str]] | None = None


@frozen
class ProducerConnection:
    connection_set: list[Connection] = attrs.Factory(list)


# ------------------------------------------------------------------------- admin


@frozen
class SubscriptionGroupConfig:
    group_name: Group
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: RetryQueueNums = 1
    retry_max_times: Int = 16
    broker_id: NonNegLong = 0
    which_broker_when_consume_slowly: NonNegLong = 1
    notify_consumer_ids_changed_enable: bool = True
    # 5.x: the group's 5.x consumers pop orderly (the Proxy tells its SDKs they are FIFO)
    consume_message_orderly: bool = False


@frozen
class SubscriptionGroupWrapper:
    subscription_group_table: dict[str, SubscriptionGroupConfig] = attrs.Factory(dict)
    data_version: DataVersion = attrs.Factory(DataVersion)


@frozen
class OffsetWrapper:
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0
    pull_offset: int | None = None  # 5.x; ours sets it for a pop group with messages in flight


@frozen
class ConsumeStats:
    offset_table: dict[MessageQueue, OffsetWrapper] = attrs.Factory(dict)
    consume_tps: float = 0.0


@frozen
class ConsumeStatsList:
    """GET_BROKER_CONSUME_STATS: every group's stats on one broker, per topic."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = attrs.Factory(list)
    broker_addr: str = ""
    total_diff: int = 0


@frozen
class ConsumeQueueData:
    """One ConsumeQueue unit as QUERY_CONSUME_QUEUE shows it; ``eval`` says whether the
    asking group's subscription lets it through."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None


@frozen
class QueryConsumeQueueResponseBody:
    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] = attrs.Factory(list)
    max_queue_index: int = 0
    min_queue_index: int = 0


@frozen
class BrokerStatsItem:
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@frozen
class BrokerStatsData:
    """VIEW_BROKER_STATS_DATA: one counter over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = attrs.Factory(BrokerStatsItem)
    stats_hour: BrokerStatsItem = attrs.Factory(BrokerStatsItem)
    stats_day: BrokerStatsItem = attrs.Factory(BrokerStatsItem)


@frozen
class QueueTimeSpan:
    """How far a group is behind on one queue, in time: the queue's first and last store
    times, the store time of the last message consumed, and how long ago the next one was
    stored (0 when caught up)."""

    message_queue: MessageQueue
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0


@frozen
class QueryConsumeTimeSpanBody:
    consume_time_span_set: list[QueueTimeSpan] = attrs.Factory(list)


@frozen
class TopicOffset:
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@frozen
class TopicStatsTable:
    offset_table: dict[MessageQueue, TopicOffset] = attrs.Factory(dict)


@frozen
class ConsumerOffsetSerializeWrapper:
    offset_table: dict[str, dict[int, int]] = attrs.Factory(dict)


@frozen
class DelayOffsetSerializeWrapper:
    offset_table: dict[int, int] = attrs.Factory(dict)


@frozen
class ResetOffsetBody:
    offset_table: dict[MessageQueue, int] = attrs.Factory(dict)


@frozen
class ProcessQueueInfo:
    """One queue inside a consumer (GET_CONSUMER_RUNNING_INFO): what it holds and when it last
    pulled and consumed. ``droped`` is Java's spelling of the field."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mi_b: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


@frozen
class ConsumerRunningInfo:
    properties: dict[str, str] = attrs.Factory(dict)
    subscription_set: list[SubscriptionData] = attrs.Factory(list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = attrs.Factory(dict)
    status_table: dict[str, dict[str, float]] = attrs.Factory(dict)
    jstack: str | None = None


class CMResult(enum.Enum):
    """How a consumer handled a message it was asked to consume directly."""

    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


@frozen
class ConsumeMessageDirectlyResult:
    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0


# MessageQueue is a map key in several bodies; fastjson writes it as an inline object key.
def _mq_unstructure(mq: MessageQueue) -> fastjson.ObjectKey:
    return fastjson.ObjectKey.of(
        {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}
    )


def _mq_structure(value: object, _: object) -> MessageQueue:
    if isinstance(value, str):
        value = fastjson.loads(value)  # BrowserCompatible writers quote object keys
    if isinstance(value, fastjson.ObjectKey):
        value = value.as_dict()
    if not isinstance(value, dict):
        raise ValueError(f"{value!r} is not a MessageQueue")
    return MessageQueue(
        topic=serde._java_str(value["topic"]),
        broker_name=serde._java_str(value["brokerName"]),
        queue_id=serde._java_int(value["queueId"]),
    )


serde.body_converter.register_unstructure_hook(MessageQueue, _mq_unstructure)
serde.body_converter.register_structure_hook(MessageQueue, _mq_structure)
