"""One attrs class per custom header (spec/remoting.md §9).

A field without a default is required (Java's ``@CFNotNull``); ``X | None = None`` is optional.
Names are snake_case; the wire spelling is camelCase (serde.wire_name) unless ``wire`` says
otherwise. Decode with ``serde.decode_header``, encode with ``serde.encode_header_fields``.
"""

from __future__ import annotations

import attrs


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
    broker_id: int
    compressed: bool = False
    body_crc32: int = 0


@frozen
class RegisterBrokerResponseHeader:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@frozen
class UnRegisterBrokerRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@frozen
class QueryDataVersionRequestHeader:
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


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
    namespace: str
    key: str
    value: str


@frozen
class GetKVConfigRequestHeader:
    namespace: str
    key: str


@frozen
class GetKVConfigResponseHeader:
    value: str | None = None


@frozen
class DeleteKVConfigRequestHeader:
    namespace: str
    key: str


@frozen
class GetKVListByNamespaceRequestHeader:
    namespace: str


@frozen
class WipeWritePermOfBrokerRequestHeader:
    broker_name: str


@frozen
class WipeWritePermOfBrokerResponseHeader:
    wipe_topic_count: int


@frozen
class AddWritePermOfBrokerRequestHeader:
    broker_name: str


@frozen
class AddWritePermOfBrokerResponseHeader:
    add_topic_count: int


@frozen
class GetTopicsByClusterRequestHeader:
    cluster: str


# ------------------------------------------------------------------------- send (§9.2)


@frozen
class SendMessageRequestHeader:
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None
    bname: str | None = None


@frozen
class ReplyMessageRequestHeader:
    """PUSH_REPLY_MESSAGE_TO_CLIENT: a request-reply answer pushed to the requester."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    born_host: str
    store_host: str
    store_timestamp: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False


@frozen
class SendMessageRequestHeaderV2:
    """SEND_MESSAGE_V2's one-letter fields; ``to_v1`` gives the readable form."""

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: int  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool = False  # unitMode
    l: int | None = None  # maxReconsumeTimes  # noqa: E741
    m: bool = False  # batch
    n: str | None = None  # bname

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
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None


# ------------------------------------------------------------------------- pull (§9.3)


@frozen
class PullMessageRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None = None
    expression_type: str | None = None
    bname: str | None = None


@frozen
class PullMessageResponseHeader:
    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int


# ------------------------------------------------------------------------- offsets (§9.4)


@frozen
class QueryConsumerOffsetRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    bname: str | None = None


@frozen
class QueryConsumerOffsetResponseHeader:
    offset: int


@frozen
class UpdateConsumerOffsetRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int
    bname: str | None = None


@frozen
class GetMaxOffsetRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@frozen
class GetMaxOffsetResponseHeader:
    offset: int


@frozen
class GetMinOffsetRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@frozen
class GetMinOffsetResponseHeader:
    offset: int


@frozen
class SearchOffsetRequestHeader:
    topic: str
    queue_id: int
    timestamp: int
    bname: str | None = None


@frozen
class SearchOffsetResponseHeader:
    offset: int


@frozen
class GetEarliestMsgStoretimeRequestHeader:
    topic: str
    queue_id: int
    bname: str | None = None


@frozen
class GetEarliestMsgStoretimeResponseHeader:
    timestamp: int


# ------------------------------------------------------------------------- lookup (§9.5)


@frozen
class ViewMessageRequestHeader:
    offset: int
    bname: str | None = None


@frozen
class QueryMessageRequestHeader:
    topic: str
    key: str
    max_num: int
    begin_timestamp: int
    end_timestamp: int
    bname: str | None = None


@frozen
class QueryMessageResponseHeader:
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


# ------------------------------------------------------------------------- clients (§9.6-9.10)


@frozen
class UnregisterClientRequestHeader:
    client_id: str = attrs.field(metadata={"wire": "clientID"})
    producer_group: str | None = None
    consumer_group: str | None = None


@frozen
class GetConsumerListByGroupRequestHeader:
    consumer_group: str


@frozen
class ConsumerSendMsgBackRequestHeader:
    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None
    bname: str | None = None


@frozen
class EndTransactionRequestHeader:
    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: int
    msg_id: str
    from_transaction_check: bool = False
    transaction_id: str | None = None
    bname: str | None = None


@frozen
class CheckTransactionStateRequestHeader:
    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


@frozen
class NotifyConsumerIdsChangedRequestHeader:
    consumer_group: str


@frozen
class ResetOffsetRequestHeader:
    """INVOKE_BROKER_TO_RESET_OFFSET (admin -> broker) and RESET_CONSUMER_CLIENT_OFFSET (-> client)."""

    topic: str
    group: str
    timestamp: int
    is_force: bool = False


@frozen
class GetConsumerRunningInfoRequestHeader:
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@frozen
class GetConsumerStatusRequestHeader:
    topic: str
    group: str
    client_addr: str | None = None


# ------------------------------------------------------------------------- admin (§9.11)


@frozen
class CreateTopicRequestHeader:
    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int | None = None
    order: bool = False


@frozen
class DeleteTopicRequestHeader:
    topic: str


@frozen
class GetTopicStatsInfoRequestHeader:
    topic: str


@frozen
class GetConsumeStatsRequestHeader:
    consumer_group: str
    topic: str | None = None


@frozen
class GetConsumerConnectionListRequestHeader:
    consumer_group: str


@frozen
class GetProducerConnectionListRequestHeader:
    producer_group: str


@frozen
class DeleteSubscriptionGroupRequestHeader:
    group_name: str
    remove_offset: bool = False


@frozen
class GetBrokerConfigResponseHeader:
    version: str


@frozen
class QueryTopicConsumeByWhoRequestHeader:
    topic: str


@frozen
class QueryConsumeTimeSpanRequestHeader:
    topic: str
    group: str
