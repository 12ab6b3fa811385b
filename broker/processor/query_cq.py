"""QUERY_CONSUME_QUEUE (``mqadmin queryCq``): the raw units of a ConsumeQueue from an index
(physical offset, size, tags code), with the queue's min and max, and, when a consumer group
is named, its subscription and whether each unit passes it: what an operator reads to see why
a message is or is not delivered (Java's AdminBrokerProcessor.queryConsumeQueue)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from broker.processor.message_filter import tags_filter
from remoting.body import ConsumeQueueData, QueryConsumeQueueResponseBody
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.headers import QueryConsumeQueueRequestHeader
from remoting.serde import decode_header, encode_body

if TYPE_CHECKING:
    from broker.controller import BrokerController

_UNIT = struct.Struct(">qiq")
MAX_COUNT = 1000  # units in one answer, whatever the request asks


class QueryConsumeQueueProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.QUERY_CONSUME_QUEUE, self.handle)

    def handle(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(QueryConsumeQueueRequestHeader, request.ext_fields)
        topic, queue_id, index = header.topic, header.queue_id, header.index
        count = min(max(header.count, 0), MAX_COUNT)
        store = self.broker.store
        queue = store.find_consume_queue(topic, queue_id)
        if queue is None:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, f"{queue_id}@{topic} is not exist!"
            )
        subscription, filter_data, passes = None, None, None
        group = header.consumer_group
        if group:
            subscription = self.broker.clients.find_subscription(group, topic)
            if subscription is None:
                filter_data = f"{group}@{topic} is not online!"
            elif subscription.expression_type in (None, "", "TAG"):
                passes = tags_filter(subscription.sub_string).is_matched_by_consume_queue
        units = queue.units(index, count) if index >= 0 else None
        data = []
        for at in range(0, len(units) if units is not None else 0, _UNIT.size):
            phys, size, tags_code = _UNIT.unpack_from(units, at)
            data.append(
                ConsumeQueueData(
                    physic_offset=phys,
                    physic_size=size,
                    tags_code=tags_code,
                    eval=passes(tags_code) if passes is not None else False,
                )
            )
        body = QueryConsumeQueueResponseBody(
            subscription_data=subscription,
            filter_data=filter_data,
            queue_data=data,
            max_queue_index=store.get_max_offset_in_queue(topic, queue_id),
            min_queue_index=max(0, store.get_min_offset_in_queue(topic, queue_id)),
        )
        remark = None if units is not None else f"Index {index} of {queue_id}@{topic} is not exist!"
        return request.make_response(remark=remark, body=encode_body(body))
