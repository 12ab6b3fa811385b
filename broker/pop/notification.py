"""NOTIFICATION (5.x NotificationProcessor): whether a group has messages to pop on a topic
(or its pop retry topic), waiting up to pollTime for one (polling.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from broker.pop import ck_info
from broker.pop.checks import pop_checks
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.header_codec import encode_header_fields
from remoting.headers import NotificationRequestHeader, NotificationResponseHeader
from remoting.serde import decode_header

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection


class NotificationProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.NOTIFICATION, self.notification)

    # ------------------------------------------------------------------ NOTIFICATION

    async def notification(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        """Whether the group has messages to pop, waiting up to pollTime for one."""
        header = decode_header(NotificationRequestHeader, request.ext_fields)
        broker = self.broker
        topic_config = pop_checks(self.broker, header.consumer_group, header.topic, header.queue_id)
        retry_topic = ck_info.pop_retry_topic(header.topic, header.consumer_group)
        deadline = trio.current_time() + header.poll_time / 1000
        while True:
            has_msg = self._has_message(header, topic_config, retry_topic)
            remaining = deadline - trio.current_time()
            if has_msg or remaining <= 0 or broker.pop_polling.full:
                fields = encode_header_fields(NotificationResponseHeader(has_msg=has_msg))
                code = ResponseCode.SUCCESS
                if not has_msg and broker.pop_polling.full and remaining > 0:
                    code = ResponseCode.POLLING_FULL
                return request.make_response(code, None, fields)
            await broker.pop_polling.wait((header.topic, retry_topic), remaining)

    def _has_message(
        self, header: NotificationRequestHeader, topic_config: Any, retry_topic: str
    ) -> bool:
        store, group = self.broker.store, header.consumer_group
        queues = [(header.topic, q) for q in range(topic_config.read_queue_nums)]
        if header.queue_id >= 0:
            queues = [(header.topic, header.queue_id)]
        retry_config = self.broker.topics.get(retry_topic)
        if retry_config is not None:
            queues += [(retry_topic, q) for q in range(retry_config.read_queue_nums)]
        for topic, queue_id in queues:
            offset = self.broker.offsets.query(group, topic, queue_id)
            if offset < 0:
                offset = max(0, store.get_min_offset_in_queue(topic, queue_id))
            if store.get_max_offset_in_queue(topic, queue_id) > offset:
                return True
        return False
