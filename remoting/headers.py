"""One attrs class per custom header (docs/spec/remoting.md §9).

A field without a default is required (Java's ``@CFNotNull``); ``X | None = None`` is optional.
A field's type is its Java type and range (remoting.wire_types: ``Int``, ``Long``, ``Topic``,
...), which the decoder checks before a processor sees the value. Names are snake_case; the
wire spelling is camelCase (serde.wire_name) unless ``wire`` says otherwise (``java`` gives the
readable name of a one-letter field for remarks). Decode with ``serde.decode_header``, encode
with ``serde.encode_header_fields``.
"""

from __future__ import annotations

import attrs

from remoting.wire_types import (
    Group,
    Int,
    KVName,
    Long,
    NonNegInt,
    NonNegLong,
    Perm,
    QueueNums,
    SendSysFlag,
    Topic,
    TopicFilterTypeName,
)


def frozen(cls: type) -> type:
    """Mutable slotted classes: a frozen attrs __init__ costs twice as much, and a header is
    built on every request. Treat them as values all the same. Positional __init__ where the
    field order allows it (the compiled decoders call it positionally: a 14-field header is
    built in 0.4 us instead of 1 us with keywords); keyword-only otherwise."""
    try:
        return attrs.define(cls)
    except ValueError:  # a required field after a defaulted one
        return attrs.define(cls, kw_only=True)


# ------------------------------------------------------------------------- NameServer (§9.1)


@frozen
class RegisterBrokerRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: NonNegLong
    compressed: bool = False
    body_crc32: Int = 0


@frozen
class RegisterBrokerResponseHeader:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@frozen
class UnRegisterBrokerRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: NonNegLong


@frozen
class QueryDataVersionRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: NonNegLong


@frozen
class QueryDataVersionResponseHeader:
    changed: bool


@frozen
class GetRouteInfoRequestHeader:
    topic: str
    accept_standard_json_only: bool | None = None


@frozen
class DeleteTopicFromNamesrvRequestHeader:
    topic: str
    cluster_name: str | None = None


@frozen
class PutKVConfigRequestHeader:
    namespace: KVName
    key: KVName
    value: str


@frozen
class GetKVConfigRequestHeader:
    namespace: KVName
    key: KVName


@frozen
class GetKVConfigResponseHeader:
    value: str | None = None


@frozen
class DeleteKVConfigRequestHeader:
    namespace: KVName
    key: KVName


@frozen
class GetKVListByNamespaceRequestHeader:
    namespace: KVName


@frozen
class WipeWritePermOfBrokerRequestHeader:
    broker_name: str


@frozen
class WipeWritePermOfBrokerResponseHeader:
    wipe_topic_count: Int


@frozen
class AddWritePermOfBrokerRequestHeader:
    broker_name: str


@frozen
class AddWritePermOfBrokerResponseHeader:
    add_topic_count: Int


@frozen
class GetTopicsByClusterRequestHeader:
    cluster: str


# ------------------------------------------------------------------------- send (§9.2)


@frozen
class SendMessageRequestHeader:
    producer_group: str
    topic: Topic
    default_topic: Topic
    default_topic_queue_nums: Int
    queue_id: Int
    sys_flag: SendSysFlag
    born_timestamp: Long
    flag: Int
    properties: str | None = None
    reconsume_times: Int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: Int | None = None
    bname: str | None = None


@frozen
class ReplyMessageRequestHeader:
    """PUSH_REPLY_MESSAGE_TO_CLIENT: a request-reply answer pushed to the requester."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: Int
    queue_id: Int
    sys_flag: Int
    born_timestamp: Long
    flag: Int
    born_host: str
    store_host: str
    store_timestamp: Long
    properties: str | None = None
    reconsume_times: Int | None = None
    unit_mode: bool = False


@frozen
class SendMessageRequestHeaderV2:
    """SEND_MESSAGE_V2's one-letter fields; ``to_v1`` gives the readable form."""

    a: str = attrs.field(metadata={"java": "producerGroup"})
    b: Topic = attrs.field(metadata={"java": "topic"})
    c: Topic = attrs.field(metadata={"java": "defaultTopic"})
    d: Int = attrs.field(metadata={"java": "defaultTopicQueueNums"})
    e: Int = attrs.field(metadata={"java": "queueId"})
    f: SendSysFlag = attrs.field(metadata={"java": "sysFlag"})
    g: Long = attrs.field(metadata={"java": "bornTimestamp"})
    h: Int = attrs.field(metadata={"java": "flag"})
    i: str | None = attrs.field(default=None, metadata={"java": "properties"})
    j: Int | None = attrs.field(default=None, metadata={"java": "reconsumeTimes"})
    k: bool = attrs.field(default=False, metadata={"java": "unitMode"})
    l: Int | None = attrs.field(default=None, metadata={"java": "maxReconsumeTimes"})  # noqa: E741
    m: bool = attrs.field(default=False, metadata={"java": "batch"})
    n: str | None = attrs.field(default=None, metadata={"java": "bname"})

    def to_v1(self) -> SendMessageRequestHeader:
        # Positional (every send goes through here), in SendMessageRequestHeader's field order:
        # its batch comes before maxReconsumeTimes.
        return SendMessageRequestHeader(
            self.a, self.b, self.c, self.d, self.e, self.f, self.g, self.h,
            self.i, self.j, self.k, self.m, self.l, self.n,
        )  # fmt: skip

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        return cls(
            a=v1.producer_group,
            b=v1.topic,
            c=v1.default_topic,
            d=v1.default_topic_queue_nums,
            e=v1.queue_id,
            f=v1.sys_flag,
            g=v1.born_timestamp,
            h=v1.flag,
            i=v1.properties,
            j=v1.reconsume_times,
            k=v1.unit_mode,
            l=v1.max_reconsume_times,
            m=v1.batch,
            n=v1.bname,
        )


@frozen
class SendMessageResponseHeader:
    msg_id: str
    queue_id: Int
    queue_offset: Long
    transaction_id: str | None = None


# ------------------------------------------------------------------------- pull (§9.3)


@frozen
class PullMessageRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: Int
    queue_offset: Long
    max_msg_nums: Int
    sys_flag: Int
    commit_offset: Long
    suspend_timeout_millis: Long
    sub_version: Long
    subscription: str | None = None
    expression_type: str | None = None
    bname: str | None = None


@frozen
class PullMessageResponseHeader:
    suggest_which_broker_id: Long
    next_begin_offset: Long
    min_offset: Long
    max_offset: Long


# ------------------------------------------------------------------------- offsets (§9.4)


@frozen
class QueryConsumerOffsetRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: Int
    bname: str | None = None


@frozen
class QueryConsumerOffsetResponseHeader:
    offset: Long


@frozen
class UpdateConsumerOffsetRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: NonNegInt
    commit_offset: NonNegLong
    bname: str | None = None


@frozen
class GetMaxOffsetRequestHeader:
    topic: Topic
    queue_id: Int
    bname: str | None = None


@frozen
class GetMaxOffsetResponseHeader:
    offset: Long


@frozen
class GetMinOffsetRequestHeader:
    topic: Topic
    queue_id: Int
    bname: str | None = None


@frozen
class GetMinOffsetResponseHeader:
    offset: Long


@frozen
class SearchOffsetRequestHeader:
    topic: Topic
    queue_id: Int
    timestamp: Long
    bname: str | None = None


@frozen
class SearchOffsetResponseHeader:
    offset: Long


@frozen
class GetEarliestMsgStoretimeRequestHeader:
    topic: Topic
    queue_id: Int
    bname: str | None = None


@frozen
class GetEarliestMsgStoretimeResponseHeader:
    timestamp: Long


# ------------------------------------------------------------------------- lookup (§9.5)


@frozen
class ViewMessageRequestHeader:
    offset: NonNegLong
    bname: str | None = None


@frozen
class QueryMessageRequestHeader:
    topic: Topic
    key: str
    max_num: Int
    begin_timestamp: Long
    end_timestamp: Long
    bname: str | None = None


@frozen
class QueryMessageResponseHeader:
    index_last_update_timestamp: Long
    index_last_update_phyoffset: Long


# ------------------------------------------------------------------------- clients (§9.6-9.10)


@frozen
class UnregisterClientRequestHeader:
    client_id: str = attrs.field(metadata={"wire": "clientID"})
    producer_group: str | None = None
    consumer_group: Group | None = None


@frozen
class GetConsumerListByGroupRequestHeader:
    consumer_group: Group


@frozen
class ConsumerSendMsgBackRequestHeader:
    offset: NonNegLong
    group: Group
    delay_level: Int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: Int | None = None
    bname: str | None = None


@frozen
class EndTransactionRequestHeader:
    producer_group: str
    tran_state_table_offset: NonNegLong
    commit_log_offset: NonNegLong
    commit_or_rollback: Int
    msg_id: str
    from_transaction_check: bool = False
    transaction_id: str | None = None
    bname: str | None = None


@frozen
class CheckTransactionStateRequestHeader:
    tran_state_table_offset: Long
    commit_log_offset: Long
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


@frozen
class NotifyConsumerIdsChangedRequestHeader:
    consumer_group: str


@frozen
class ResetOffsetRequestHeader:
    """INVOKE_BROKER_TO_RESET_OFFSET (admin -> broker) and RESET_CONSUMER_CLIENT_OFFSET (-> client)."""

    topic: Topic
    group: Group
    timestamp: Long
    is_force: bool = False


@frozen
class GetConsumerRunningInfoRequestHeader:
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@frozen
class GetConsumerStatusRequestHeader:
    topic: Topic
    group: Group
    client_addr: str | None = None


# ------------------------------------------------------------------------- admin (§9.11)


@frozen
class CreateTopicRequestHeader:
    topic: Topic
    default_topic: str
    read_queue_nums: QueueNums
    write_queue_nums: QueueNums
    perm: Perm
    topic_filter_type: TopicFilterTypeName
    topic_sys_flag: Int | None = None
    order: bool = False
    attributes: str | None = None  # 5.x: "+message.type=FIFO,-key" (broker/topic_attributes.py)


@frozen
class DeleteTopicRequestHeader:
    topic: Topic


@frozen
class GetTopicStatsInfoRequestHeader:
    topic: Topic


@frozen
class GetConsumeStatsRequestHeader:
    consumer_group: Group
    topic: Topic | None = None


@frozen
class GetConsumerConnectionListRequestHeader:
    consumer_group: Group


@frozen
class GetProducerConnectionListRequestHeader:
    producer_group: str


@frozen
class DeleteSubscriptionGroupRequestHeader:
    group_name: Group
    remove_offset: bool = False


@frozen
class GetBrokerConfigResponseHeader:
    version: str


@frozen
class QueryTopicConsumeByWhoRequestHeader:
    topic: Topic


@frozen
class QueryConsumeTimeSpanRequestHeader:
    topic: Topic
    group: Group


@frozen
class CloneGroupOffsetRequestHeader:
    src_group: Group
    dest_group: Group
    topic: Topic | None = None
    offline: bool = False


@frozen
class QueryConsumeQueueRequestHeader:
    topic: Topic
    queue_id: Int
    index: Long
    count: Int = 10  # ours: Java requires it
    consumer_group: Group | None = None


@frozen
class ViewBrokerStatsDataRequestHeader:
    stats_name: str
    stats_key: str


@frozen
class GetConsumeStatsInBrokerHeader:
    is_order: bool = False


# ------------------------------------------------------------- 5.x pop consumption (docs/pop.md)


@frozen
class PopMessageRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: Int  # -1: every readable queue of the topic
    max_msg_nums: Int
    invisible_time: NonNegLong  # ms
    poll_time: NonNegLong  # ms a pop waits for messages (long polling)
    born_time: Long  # ms, the requester's clock; 0: the broker's
    init_mode: Int  # ConsumeInitMode: 0 MIN (first message), 1 MAX (the last one)
    exp_type: str | None = None
    exp: str | None = None
    order: bool = False
    attempt_id: str | None = None


@frozen
class PopMessageResponseHeader:
    pop_time: Long
    invisible_time: Long
    revive_qid: Int
    rest_num: Long
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@frozen
class AckMessageRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: Int
    extra_info: str
    offset: Long


@frozen
class ChangeInvisibleTimeRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: Int
    extra_info: str
    offset: Long
    invisible_time: NonNegLong


@frozen
class ChangeInvisibleTimeResponseHeader:
    pop_time: Long
    invisible_time: Long
    revive_qid: Int


@frozen
class NotificationRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: Int
    poll_time: NonNegLong
    born_time: Long
    order: bool = False
    attempt_id: str | None = None


@frozen
class NotificationResponseHeader:
    has_msg: bool


@frozen
class GetTopicConfigRequestHeader:
    topic: Topic


@frozen
class GetSubscriptionGroupConfigRequestHeader:
    group: Group


@frozen
class PeekMessageRequestHeader:
    consumer_group: Group
    topic: Topic
    queue_id: Int  # -1: every readable queue
    max_msg_nums: Int
