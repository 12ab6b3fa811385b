"""Request-reply (RocketMQ 4.6+): a producer sends a request and waits for one answer; the
consumer that handles the request sends the answer with ``create_reply_message``.

The request carries CORRELATION_ID, REPLY_TO_CLIENT (the requester's client id) and TTL. The
answer goes to ``{cluster}_REPLY_TOPIC`` (the cluster is the CLUSTER property the broker puts
on every message) with SEND_REPLY_MESSAGE_V2; the broker pushes it to the requester's
connection as PUSH_REPLY_MESSAGE_TO_CLIENT, where ``ReplyWaiters`` hands it to the waiting
request by correlation id, as Java's RequestFutureHolder does.
"""

from __future__ import annotations

import logging
import time
import uuid
import zlib
from typing import TYPE_CHECKING, Any

import attrs
import trio

from client.errors import MQClientError
from client.message import Message
from remoting import constants as K
from remoting import message as codec
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.headers import ReplyMessageRequestHeader
from remoting.message import MessageConst, MessageExt
from remoting.serde import decode_header

if TYPE_CHECKING:
    from client.producer import Producer

log = logging.getLogger(__name__)

REPLY_MESSAGE_FLAG = "reply"  # MSG_TYPE of an answer


class RequestTimeoutError(MQClientError):
    """The request was sent but no answer came within its timeout."""


def create_reply_message(request: MessageExt, body: bytes) -> Message:
    """The answer to ``request`` (Java's MessageUtil.createReplyMessage)."""
    cluster = request.properties.get(MessageConst.CLUSTER)
    if not cluster:
        raise MQClientError(
            f"create reply message fail, requestMessage error, property[{MessageConst.CLUSTER}] is null."
        )
    properties = {MessageConst.MSG_TYPE: REPLY_MESSAGE_FLAG}
    for name in (MessageConst.CORRELATION_ID, MessageConst.REPLY_TO_CLIENT, MessageConst.TTL):
        if name in request.properties:
            properties[name] = request.properties[name]
    return Message(K.reply_topic(cluster), body, properties=properties)


def is_reply(properties: dict[str, str]) -> bool:
    return properties.get(MessageConst.MSG_TYPE) == REPLY_MESSAGE_FLAG


@attrs.define
class _Waiter:
    arrived: trio.Event = attrs.Factory(trio.Event)
    reply: MessageExt | None = None


class ReplyWaiters:
    """Requests waiting for their answer, by correlation id.

    One table for the whole process, as Java's RequestFutureHolder: producers in one process
    share a client id, so the broker may push an answer to any of their connections."""

    _waiting: dict[str, _Waiter] = {}

    async def request(self, producer: Producer, msg: Message, timeout_s: float) -> MessageExt:
        correlation_id = str(uuid.uuid4())
        msg = attrs.evolve(
            msg,
            properties={
                **msg.properties,
                MessageConst.CORRELATION_ID: correlation_id,
                MessageConst.REPLY_TO_CLIENT: producer.instance.client_id,
                MessageConst.TTL: str(int(timeout_s * 1000)),
            },
        )
        waiter = self._waiting[correlation_id] = _Waiter()
        try:
            with trio.move_on_after(timeout_s):
                await producer.send(msg)
                await waiter.arrived.wait()
        finally:
            del self._waiting[correlation_id]
        if waiter.reply is None:
            raise RequestTimeoutError(
                f"send request message to <{msg.topic}> OK, but wait reply message timeout, "
                f"{int(timeout_s * 1000)} ms."
            )
        return waiter.reply

    def receive(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT from a broker."""
        try:
            reply = _reply_message(request)
        except (ValueError, TypeError, zlib.error) as exc:
            return request.error_response(ResponseCode.SYSTEM_ERROR, f"bad reply message: {exc}")
        correlation_id = reply.properties.get(MessageConst.CORRELATION_ID, "")
        waiter = self._waiting.get(correlation_id)
        if waiter is None:
            log.warning(
                "a reply matches no request (timed out?): correlation id %r from %s",
                correlation_id,
                reply.born_host,
            )
        elif waiter.reply is None:
            waiter.reply = reply
            waiter.arrived.set()
        return request.make_response()


def _reply_message(request: RemotingCommand) -> MessageExt:
    header = decode_header(ReplyMessageRequestHeader, request.ext_fields)
    body = bytes(request.body)
    if header.sys_flag & codec.COMPRESSED_FLAG:
        body = zlib.decompress(body)
    properties = codec.string_to_properties(header.properties)
    properties[MessageConst.ARRIVE_TIME] = str(time.time_ns() // 1_000_000)
    return MessageExt(
        topic=header.topic,
        body=body,
        flag=header.flag,
        properties=properties,
        queue_id=header.queue_id,
        sys_flag=header.sys_flag,
        born_timestamp=header.born_timestamp,
        born_host=header.born_host.lstrip("/"),
        store_timestamp=header.store_timestamp,
        store_host=header.store_host.lstrip("/"),
        reconsume_times=header.reconsume_times or 0,
    )
