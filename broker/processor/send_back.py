"""CONSUMER_SEND_MSG_BACK: a consumer gives a message back for a later retry.

The message is found by its CommitLog offset and stored again in ``%RETRY%group`` with delay
level ``3 + reconsumeTimes`` (so the schedule service brings it back later), with
RETRY_TOPIC and ORIGIN_MESSAGE_ID set; past the group's maximum it goes to ``%DLQ%group``.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any

from broker.processor.send import FAQ
from broker.stats import SNDBCK_PUT_NUMS
from broker.store.types import MessageExtBrokerInner, PutMessageStatus
from remoting import constants as K
from remoting import message as codec
from remoting import names
from remoting.codes import V3_4_9, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RequestError
from remoting.headers import ConsumerSendMsgBackRequestHeader
from remoting.message import MessageConst
from remoting.serde import decode_header

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection

log = logging.getLogger(__name__)

RW = K.PERM_READ | K.PERM_WRITE


def _host(text: str) -> tuple[bytes, int]:
    host, _, port = text.rpartition(":")
    return codec.host_bytes(host.strip("[]")), int(port)


LAYOUT_SYS_FLAG_BITS = codec.BORNHOST_V6_FLAG | codec.STOREHOSTADDRESS_V6_FLAG


def _java_int(value: int) -> int:
    """Java's int arithmetic: a stored reconsumeTimes of 2^31 - 1 comes back as -2^31, as
    Java's ``getReconsumeTimes() + 1`` gives (the record field is an int)."""
    return (value + 2**31) % 2**32 - 2**31


def _derived_topic(topic: str) -> str:
    """A retry or dead-letter topic built from a (valid) group: one directory of the store."""
    problem = names.topic_problem(topic)
    if problem is not None:
        raise RequestError(ResponseCode.SYSTEM_ERROR, problem)
    return topic


class SendBackProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def handle(self, connection: Connection, request: RemotingCommand) -> Any:
        header = decode_header(ConsumerSendMsgBackRequestHeader, request.ext_fields)
        broker = self.broker
        group = broker.groups.find(header.group)
        if group is None:
            raise RequestError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {header.group}{FAQ}",
            )
        if not K.is_writeable(broker.config.broker_permission):
            raise RequestError(
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending message is forbidden",
            )
        if group.retry_queue_nums <= 0:
            return request.make_response()  # the group wants no retries: drop it
        record = broker.store.look_message_by_offset(header.offset)
        if record is None:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}"
            )
        original = codec.decode_message(record, decompress=False)
        max_times = group.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        delay_level = header.delay_level
        properties = dict(original.properties)
        properties.setdefault(MessageConst.RETRY_TOPIC, original.topic)
        properties[MessageConst.WAIT] = "false"
        if original.reconsume_times >= max_times or delay_level < 0:
            topic = _derived_topic(K.dlq_topic(header.group))
            config = broker.topics.create_in_send_back(topic, 1, perm=RW)
            properties.pop(MessageConst.DELAY, None)
            log.info(
                "message %s to DLQ %s after %d retries",
                original.msg_id,
                topic,
                original.reconsume_times,
            )
        else:
            topic = _derived_topic(K.retry_topic(header.group))
            config = broker.topics.create_in_send_back(topic, group.retry_queue_nums, perm=RW)
            if delay_level == 0:
                delay_level = _java_int(3 + original.reconsume_times)
            properties[MessageConst.DELAY] = str(delay_level)
        if not K.is_writeable(config.perm):
            raise RequestError(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
            )
        properties.setdefault(
            MessageConst.ORIGIN_MESSAGE_ID, header.origin_msg_id or original.offset_msg_id
        )
        msg = MessageExtBrokerInner(
            topic=topic,
            queue_id=random.randrange(max(1, config.write_queue_nums)),
            body=original.body,
            properties=properties,
            flag=original.flag,
            sys_flag=original.sys_flag & ~LAYOUT_SYS_FLAG_BITS,  # this store's addresses decide
            born_timestamp=original.born_timestamp,
            born_host=_host(original.born_host),
            reconsume_times=_java_int(original.reconsume_times + 1),
        )
        result = broker.store.put_message(msg)
        if result.status is PutMessageStatus.PUT_OK:
            # counted against the topic the message was first sent to, as Java's broker
            back_topic = original.properties.get(MessageConst.RETRY_TOPIC) or original.topic
            broker.stats.add(SNDBCK_PUT_NUMS, f"{back_topic}@{header.group}", 1)
            return request.make_response()
        return request.error_response(ResponseCode.SYSTEM_ERROR, result.status.name)
