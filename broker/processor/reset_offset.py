"""A group's offsets moved by an operator.

INVOKE_BROKER_TO_RESET_OFFSET (``mqadmin resetOffsetByTime``): move a group's offsets on a
topic to the first message stored at or after a time.

As in RocketMQ the new offset per queue is the one found by time, unless it lies ahead of the
group's committed offset and ``isForce`` is false; online members get RESET_CONSUMER_CLIENT_OFFSET.
Unlike RocketMQ 4.x (which answers CONSUMER_NOT_ONLINE and leaves the tool to fall back to
plain offset updates), the broker also commits the new offsets itself, so a group with no member
online is reset too.

CLONE_GROUP_OFFSET (``mqadmin cloneGroupOffset``): a new group starts where another one is, on
a topic or (no topic given) on every topic the source committed on; unless ``offline``, a topic
the source group's online members do not subscribe is skipped, as in RocketMQ. (RocketMQ's
broker clones nothing when the topic is left out; this clones each of the source's topics.)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from remoting.body import MessageQueue, ResetOffsetBody
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.headers import CloneGroupOffsetRequestHeader, ResetOffsetRequestHeader
from remoting.serde import decode_header, encode_body, encode_header_fields

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)


class ResetOffsetProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.handle)
        server.register(RequestCode.CLONE_GROUP_OFFSET, self.clone)

    def clone(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(CloneGroupOffsetRequestHeader, request.ext_fields)
        source, dest, topic, offline = (
            header.src_group,
            header.dest_group,
            header.topic,
            header.offline,
        )
        broker = self.broker
        online = broker.clients.consumer_groups.get(source)
        for name in sorted([topic] if topic else broker.offsets.topics_of_group(source)):
            if broker.topics.get(name) is None:
                log.warning("cloneGroupOffset: topic %s does not exist here", name)
                continue
            if (
                not offline
                and online is not None
                and online.subscriptions
                and (name not in online.subscriptions)
            ):
                log.warning("cloneGroupOffset: %s does not subscribe to %s", source, name)
                continue
            cloned = broker.offsets.clone(source, dest, name)
            log.info("cloneGroupOffset %s -> %s on %s: %d queues", source, dest, name, cloned)
        return request.make_response()

    def handle(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(ResetOffsetRequestHeader, request.ext_fields)
        broker = self.broker
        config = broker.topics.get(header.topic)
        if config is None:
            return request.error_response(
                ResponseCode.TOPIC_NOT_EXIST, f"[reset-offset] topic does not exist: {header.topic}"
            )
        store = broker.store
        table: dict[MessageQueue, int] = {}
        for queue_id in range(config.write_queue_nums):
            if header.timestamp < 0:
                by_time = store.get_max_offset_in_queue(header.topic, queue_id)
            else:
                by_time = store.get_offset_in_queue_by_time(
                    header.topic, queue_id, header.timestamp
                )
            committed = broker.offsets.query(header.group, header.topic, queue_id)
            offset = (
                by_time if header.is_force or committed < 0 or by_time < committed else committed
            )
            mq = MessageQueue(
                topic=header.topic, broker_name=broker.config.broker_name, queue_id=queue_id
            )
            table[mq] = offset
            broker.offsets.commit(header.group, header.topic, queue_id, offset)
        body = encode_body(ResetOffsetBody(offset_table=table))
        online = broker.clients.consumer_groups.get(header.group)
        for channel in list(online.channels) if online is not None else []:
            notice = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                encode_header_fields(header),
                body,
                oneway=True,
            )
            channel.send_nowait(notice)
        return request.make_response(body=body)
