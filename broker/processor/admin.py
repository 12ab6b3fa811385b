"""Admin requests (docs/spec/remoting.md §9.11): topics, subscription groups, stats, connections,
offsets and the broker's config, as mqadmin and the consoles call them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker import topic_attributes
from broker.config import config_lines
from remoting import constants as K
from remoting.body import (
    BrokerStatsData,
    ConsumerConnection,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    KVTable,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    QueryConsumeTimeSpanBody,
    QueueTimeSpan,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicFilterType,
    TopicList,
    TopicOffset,
    TopicStatsTable,
)
from remoting.body import Connection as ConnectionBody
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RequestError
from remoting.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from remoting.serde import check_body, decode_body, decode_header, encode_body

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection

log = logging.getLogger(__name__)


class AdminBrokerProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        for code, handler in (
            (RequestCode.UPDATE_AND_CREATE_TOPIC, self.create_topic),
            (RequestCode.GET_TOPIC_CONFIG, self.topic_config),
            (RequestCode.DELETE_TOPIC_IN_BROKER, self.delete_topic),
            (RequestCode.GET_ALL_TOPIC_CONFIG, self.all_topic_config),
            (RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, self.system_topics),
            (RequestCode.GET_BROKER_RUNTIME_INFO, self.runtime_info),
            (RequestCode.GET_BROKER_CONFIG, self.broker_config),
            (RequestCode.GET_TOPIC_STATS_INFO, self.topic_stats),
            (RequestCode.GET_CONSUME_STATS, self.consume_stats),
            (RequestCode.GET_BROKER_CONSUME_STATS, self.broker_consume_stats),
            (RequestCode.VIEW_BROKER_STATS_DATA, self.view_stats),
            (RequestCode.QUERY_CONSUME_TIME_SPAN, self.consume_time_span),
            (RequestCode.GET_CONSUMER_CONNECTION_LIST, self.consumer_connections),
            (RequestCode.GET_PRODUCER_CONNECTION_LIST, self.producer_connections),
            (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, self.update_group),
            (RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.all_groups),
            (RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, self.group_config),
            (RequestCode.DELETE_SUBSCRIPTIONGROUP, self.delete_group),
            (RequestCode.GET_ALL_CONSUMER_OFFSET, self.all_consumer_offsets),
            (RequestCode.GET_ALL_DELAY_OFFSET, self.all_delay_offsets),
            (RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.consumed_by_who),
        ):
            server.register(code, handler)

    # ------------------------------------------------------------------------ topics

    def create_topic(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        """UPDATE_AND_CREATE_TOPIC. The decoder checked the name, the queue numbers (1 to
        QUEUE_NUMS_MAX), the perm bits and the filter type."""
        header = decode_header(CreateTopicRequestHeader, request.ext_fields)
        self._refuse_system_topic(header.topic)
        config = TopicConfig(
            topic_name=header.topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=TopicFilterType[header.topic_filter_type],
            topic_sys_flag=header.topic_sys_flag or 0,
            order=header.order,
            attributes=self._attributes(header),
        )
        self.broker.topics.update(config)
        return request.make_response()

    def _attributes(self, header: CreateTopicRequestHeader) -> dict[str, str] | None:
        existing = self.broker.topics.get(header.topic)
        try:
            return topic_attributes.alter(
                existing.attributes if existing is not None else None, header.attributes
            )
        except topic_attributes.AttributeError_ as exc:
            raise RequestError(ResponseCode.SYSTEM_ERROR, str(exc)) from None

    def topic_config(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_TOPIC_CONFIG (5.x): one topic's config with its attributes, as the Proxy reads
        a topic's message type (TopicConfigAndQueueMapping, without a queue mapping)."""
        header = decode_header(GetTopicConfigRequestHeader, request.ext_fields)
        config = self.broker.topics.get(header.topic)
        if config is None:
            raise RequestError(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {header.topic}"
            )
        return request.make_response(body=encode_body(config))

    def delete_topic(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(DeleteTopicRequestHeader, request.ext_fields)
        self._refuse_system_topic(header.topic)
        self.broker.delete_topics({header.topic})
        return request.make_response()

    def _refuse_system_topic(self, topic: str) -> None:
        """As Java's TopicValidator.isSystemTopic on create and delete: the broker's own topics
        (deleting SCHEDULE_TOPIC_XXXX would drop every delayed message)."""
        if topic in self.broker.topics.system_topics or K.is_system_topic(topic):
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."
            )

    def all_topic_config(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=self.broker.topics.encode(pretty=False).encode())

    def system_topics(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        manager = self.broker.topics
        topics = manager.system_topics | {t for t in manager.table if K.is_system_topic(t)}
        return request.make_response(body=encode_body(TopicList(topic_list=sorted(topics))))

    # ------------------------------------------------------------------------ broker

    def runtime_info(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        table = self.broker.runtime_info.table()
        return request.make_response(body=encode_body(KVTable(table=table)))

    def broker_config(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        text = "\n".join(config_lines(self.broker.config, self.broker.store_config)) + "\n"
        version = encode_body(self.broker.topics.data_version).decode()
        return request.make_response(ext_fields={"version": version}, body=text.encode())

    # ------------------------------------------------------------------------ stats

    def topic_stats(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetTopicStatsInfoRequestHeader, request.ext_fields)
        config = self.broker.topics.get(header.topic)
        if config is None:
            raise RequestError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        store, name = self.broker.store, self.broker.config.broker_name
        table = {}
        for queue_id in range(config.write_queue_nums):
            max_offset = store.get_max_offset_in_queue(header.topic, queue_id)
            last = (
                store.get_message_store_timestamp(header.topic, queue_id, max_offset - 1)
                if max_offset > 0
                else 0
            )
            table[MessageQueue(topic=header.topic, broker_name=name, queue_id=queue_id)] = (
                TopicOffset(
                    min_offset=max(0, store.get_min_offset_in_queue(header.topic, queue_id)),
                    max_offset=max_offset,
                    last_update_timestamp=max(0, last),
                )
            )
        return request.make_response(body=encode_body(TopicStatsTable(offset_table=table)))

    def consume_stats(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetConsumeStatsRequestHeader, request.ext_fields)
        broker, group = self.broker, header.consumer_group
        topics = {header.topic} if header.topic else broker.offsets.topics_of_group(group)
        table = {}
        for topic in sorted(topics):
            table.update(self._group_topic_offsets(group, topic))
        stats = ConsumeStats(offset_table=table, consume_tps=0.0)
        return request.make_response(body=encode_body(stats))

    def broker_consume_stats(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        """GET_BROKER_CONSUME_STATS (``mqadmin brokerConsumeStats``, monitoring exporters):
        every subscription group's stats per topic it committed on here, and the total lag."""
        order_only = decode_header(GetConsumeStatsInBrokerHeader, request.ext_fields).is_order
        broker, out, total_diff = self.broker, [], 0
        for group in sorted(broker.groups.table):
            per_topic = []
            for topic in sorted(broker.offsets.topics_of_group(group)):
                config = broker.topics.get(topic)
                if config is None or (order_only and not config.order):
                    continue
                table = self._group_topic_offsets(group, topic)
                if not table:
                    continue
                total_diff += sum(w.broker_offset - w.consumer_offset for w in table.values())
                per_topic.append(ConsumeStats(offset_table=table, consume_tps=0.0))
            out.append({group: per_topic})
        body = ConsumeStatsList(
            consume_stats_list=out, broker_addr=broker.config.broker_addr, total_diff=total_diff
        )
        return request.make_response(body=encode_body(body))

    def view_stats(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        """VIEW_BROKER_STATS_DATA: a counter (TOPIC_PUT_NUMS of a topic, GROUP_GET_NUMS of
        topic@group, ...) over the last minute, hour and day."""
        header = decode_header(ViewBrokerStatsDataRequestHeader, request.ext_fields)
        name, key = header.stats_name, header.stats_key
        item = self.broker.stats.get(name, key)
        if item is None:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")
        data = BrokerStatsData(
            stats_minute=item.snapshot("minute"),
            stats_hour=item.snapshot("hour"),
            stats_day=item.snapshot("day"),
        )
        return request.make_response(body=encode_body(data))

    def consume_time_span(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        """QUERY_CONSUME_TIME_SPAN: per queue of a topic, how far a group is behind in time
        (Java's queryConsumeTimeSpan)."""
        header = decode_header(QueryConsumeTimeSpanRequestHeader, request.ext_fields)
        topic, group = header.topic, header.group
        broker, store = self.broker, self.broker.store
        config = broker.topics.get(topic)
        if config is None:
            raise RequestError(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        now, spans = broker.clock(), []
        for queue_id in range(config.write_queue_nums):
            first = store.get_earliest_message_time(topic, queue_id)
            top = store.get_max_offset_in_queue(topic, queue_id)
            consumed = broker.offsets.query(group, topic, queue_id)
            spans.append(
                QueueTimeSpan(
                    message_queue=MessageQueue(
                        topic=topic, broker_name=broker.config.broker_name, queue_id=queue_id
                    ),
                    min_time_stamp=first,
                    max_time_stamp=store.get_message_store_timestamp(topic, queue_id, top - 1),
                    consume_time_stamp=(
                        store.get_message_store_timestamp(topic, queue_id, consumed - 1)
                        if consumed > 0
                        else first
                    ),
                    delay_time=(
                        now - store.get_message_store_timestamp(topic, queue_id, max(consumed, 0))
                        if consumed < top
                        else 0
                    ),
                )
            )
        body = QueryConsumeTimeSpanBody(consume_time_span_set=spans)
        return request.make_response(body=encode_body(body))

    def _group_topic_offsets(self, group: str, topic: str) -> dict[MessageQueue, OffsetWrapper]:
        """Per queue of ``topic``: the broker's and the group's offsets (empty when the topic
        is unknown here, or the group is online without subscribing to it any more)."""
        broker = self.broker
        config = broker.topics.get(topic)
        if config is None:
            return {}
        online = broker.clients.consumer_groups.get(group)
        if online is not None and online.subscriptions and topic not in online.subscriptions:
            return {}
        name = broker.config.broker_name
        in_flight = broker.pop_revive.lowest_unacked(group, topic)
        return {
            MessageQueue(topic=topic, broker_name=name, queue_id=queue_id): self._offset_wrapper(
                group, topic, queue_id, in_flight.get(queue_id)
            )
            for queue_id in range(config.read_queue_nums)
        }

    def _offset_wrapper(
        self, group: str, topic: str, queue_id: int, lowest_unacked: int | None = None
    ) -> OffsetWrapper:
        """A pop group with messages in flight on the queue: consumerOffset is the oldest
        unacked, pullOffset how far it popped (5.x's #Inflight is their difference)."""
        store = self.broker.store
        broker_offset = max(0, store.get_max_offset_in_queue(topic, queue_id))
        consumer_offset = max(0, self.broker.offsets.query(group, topic, queue_id))
        pull_offset = None
        if lowest_unacked is not None and lowest_unacked < consumer_offset:
            pull_offset, consumer_offset = consumer_offset, lowest_unacked
        last = (
            store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
            if consumer_offset > 0
            else 0
        )
        return OffsetWrapper(
            broker_offset=broker_offset,
            consumer_offset=consumer_offset,
            last_timestamp=max(0, last),
            pull_offset=pull_offset,
        )

    def consumed_by_who(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(QueryTopicConsumeByWhoRequestHeader, request.ext_fields)
        groups = self.broker.clients.groups_subscribing(header.topic)
        groups |= self.broker.offsets.groups_of_topic(header.topic)
        return request.make_response(body=encode_body(GroupList(group_list=sorted(groups))))

    # ------------------------------------------------------------------------ connections

    def consumer_connections(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = decode_header(GetConsumerConnectionListRequestHeader, request.ext_fields)
        group = self.broker.clients.consumer_groups.get(header.consumer_group)
        if group is None or not group.channels:
            raise RequestError(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"the consumer group[{header.consumer_group}] not online",
            )
        body = ConsumerConnection(
            connection_set=[
                ConnectionBody(
                    client_id=i.client_id,
                    client_addr=i.client_addr,
                    language=i.language,
                    version=i.version,
                )
                for i in group.channels.values()
            ],
            subscription_table=dict(group.subscriptions),
            consume_type=group.consume_type,
            message_model=group.message_model,
            consume_from_where=group.consume_from_where,
            inconsistent_subscriptions=group.inconsistent_members(),
        )
        return request.make_response(body=encode_body(body))

    def producer_connections(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = decode_header(GetProducerConnectionListRequestHeader, request.ext_fields)
        members = self.broker.clients.producer_groups.get(header.producer_group)
        if not members:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"the producer group[{header.producer_group}] not exist",
            )
        body = ProducerConnection(
            connection_set=[
                ConnectionBody(
                    client_id=i.client_id,
                    client_addr=i.client_addr,
                    language=i.language,
                    version=i.version,
                )
                for i in members.values()
            ]
        )
        return request.make_response(body=encode_body(body))

    # ------------------------------------------------------------------------ groups, offsets

    def update_group(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        config = decode_body(SubscriptionGroupConfig, request.body)
        check_body(config)  # the name, and retryQueueNums within QUEUE_NUMS_MAX
        self.broker.groups.update(config)
        return request.make_response()

    def all_groups(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        return request.make_response(body=self.broker.groups.encode(pretty=False).encode())

    def group_config(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_SUBSCRIPTIONGROUP_CONFIG (5.x): found as a consumer's request finds it (created
        when auto-creation is on, as Java's findSubscriptionGroupConfig)."""
        header = decode_header(GetSubscriptionGroupConfigRequestHeader, request.ext_fields)
        config = self.broker.groups.find(header.group)
        if config is None:
            raise RequestError(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
        return request.make_response(body=encode_body(config))

    def delete_group(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(DeleteSubscriptionGroupRequestHeader, request.ext_fields)
        self.broker.groups.delete(header.group_name)
        if header.remove_offset:
            self.broker.offsets.remove_group(header.group_name)
        return request.make_response()

    def all_consumer_offsets(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return request.make_response(body=self.broker.offsets.encode(pretty=False).encode())

    def all_delay_offsets(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        return request.make_response(body=self.broker.delay_offsets.encode(pretty=False).encode())
