"""PEEK_MESSAGE (5.x PeekMessageProcessor): up to maxMsgNums messages a pop group would get
next, from its committed offsets (the topic's queues and its pop retry topic's), changing
nothing: no checkpoint, no offset moved, no invisibility. Answered with a
PopMessageResponseHeader (restNum set, the rest 0) and the records; PULL_NOT_FOUND when none.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from broker.pop.checks import pop_checks
from broker.pop.ck_info import MAX_BATCH, pop_retry_topic
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RequestError
from remoting.header_codec import encode_header_fields
from remoting.headers import PeekMessageRequestHeader, PopMessageResponseHeader
from remoting.serde import decode_header

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection


class PeekMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.PEEK_MESSAGE, self.peek)

    def peek(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(PeekMessageRequestHeader, request.ext_fields)
        if not 0 < header.max_msg_nums <= MAX_BATCH:
            raise RequestError(ResponseCode.SYSTEM_ERROR, "peek message's num must be 1 to 32")
        broker, group = self.broker, header.consumer_group
        topic_config = pop_checks(broker, group, header.topic, header.queue_id)
        queues = [(header.topic, q) for q in range(topic_config.read_queue_nums)]
        random.shuffle(queues)
        if header.queue_id >= 0:
            queues = [(header.topic, header.queue_id)]
        retry_topic = pop_retry_topic(header.topic, group)
        retry_config = broker.topics.get(retry_topic)
        if retry_config is not None:
            queues += [(retry_topic, q) for q in range(retry_config.read_queue_nums)]
        buffers: list[Any] = []
        rest = 0
        for topic, queue_id in queues:
            store = broker.store
            offset = broker.offsets.query(group, topic, queue_id)
            if offset < 0:
                offset = max(0, store.get_min_offset_in_queue(topic, queue_id))
            rest += max(0, store.get_max_offset_in_queue(topic, queue_id) - offset)
            room = header.max_msg_nums - len(buffers)
            if room > 0:
                buffers += store.get_message(group, topic, queue_id, offset, room, None).buffers
        fields = encode_header_fields(
            PopMessageResponseHeader(pop_time=0, invisible_time=0, revive_qid=0, rest_num=rest)
        )
        if not buffers:
            return request.make_response(ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", fields)
        return request.make_response(ResponseCode.SUCCESS, "FOUND", fields, b"".join(buffers))
