"""SEND_REPLY_MESSAGE(_V2): the answer of a request-reply exchange (RocketMQ 4.6+).

A consumer that received a request (a message with CORRELATION_ID and REPLY_TO_CLIENT) sends
its answer to ``{cluster}_REPLY_TOPIC`` with one of these codes. The broker pushes it at once to
the requesting producer's connection (PUSH_REPLY_MESSAGE_TO_CLIENT, found by client id among
the producers that heartbeat here) and, with ``storeReplyMessageEnable`` (default true), also
stores it. As in Java's ReplyMessageProcessor the response says whether the push reached the
requester: SYSTEM_ERROR naming the client when it did not, even if the answer was stored.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from broker.processor.call_consumer import CALL_CLIENT_TIMEOUT_S
from broker.processor.send import put_result_response
from broker.store.types import MessageExtBrokerInner
from remoting import message as codec
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.errors import RemotingError
from remoting.headers import ReplyMessageRequestHeader, SendMessageRequestHeader
from remoting.message import MessageConst
from remoting.serde import encode_header_fields

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)


class ReplyMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        for code in (RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
            server.register(code, self.handle)

    def handle(self, connection: Connection, request: RemotingCommand) -> Any:
        sender = self.broker.send
        header = sender.header(request)
        properties = codec.string_to_properties(header.properties)
        msg = sender.inner_message(connection, request, header, properties)
        return self._reply(request, connection, header, msg)

    async def _reply(
        self,
        request: RemotingCommand,
        connection: Connection,
        header: SendMessageRequestHeader,
        msg: MessageExtBrokerInner,
    ) -> RemotingCommand:
        problem = await self._push(connection, header, msg)
        if problem is not None:
            response = request.error_response(ResponseCode.SYSTEM_ERROR, problem)
        else:
            # msgId "0": the answer may not be stored, and clients must still decode it
            response = request.make_response(
                ResponseCode.SUCCESS,
                None,
                {"msgId": "0", "queueId": str(msg.queue_id), "queueOffset": "0"},
            )
        if self.broker.config.store_reply_message_enable:
            result = self.broker.store.put_message(msg)
            result.queue_id = msg.queue_id
            if result.ok:
                stored = put_result_response(request, result)
                response.ext_fields = {**(response.ext_fields or {}), **stored.ext_fields}
            else:
                log.warning("storing the reply to %s failed: %s", msg.topic, result.status.value)
        return response

    async def _push(
        self, connection: Connection, header: SendMessageRequestHeader, msg: MessageExtBrokerInner
    ) -> str | None:
        """Push the answer to the requester; what went wrong, or None."""
        sender_id = msg.properties.get(MessageConst.REPLY_TO_CLIENT)
        if sender_id is None:
            log.warning(
                "%s is missing: the reply cannot be delivered", MessageConst.REPLY_TO_CLIENT
            )
            return f"reply message properties[{MessageConst.REPLY_TO_CLIENT}] is null"
        channel = self.broker.clients.find_producer_channel(sender_id)
        if channel is None:
            problem = f"push reply message fail, channel of <{sender_id}> not found."
            log.warning(problem)
            return problem
        properties = dict(msg.properties)
        properties[MessageConst.PUSH_REPLY_TIME] = str(time.time_ns() // 1_000_000)
        push_header = ReplyMessageRequestHeader(
            producer_group=header.producer_group,
            topic=header.topic,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=header.queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            born_host=f"/{connection.peer}",
            store_host=f"/{self.broker.config.broker_addr}",
            store_timestamp=time.time_ns() // 1_000_000,
            properties=codec.properties_to_string(properties),
            reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode,
        )
        push = RemotingCommand.request(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, encode_header_fields(push_header), msg.body
        )
        try:
            answer = await channel.invoke(push, CALL_CLIENT_TIMEOUT_S)
        except (RemotingError, OSError) as exc:
            log.warning("push reply message to <%s> failed: %s", sender_id, exc)
            return f"push reply message to {sender_id}fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> refused: %s", sender_id, answer.remark)
            return f"push reply message to {sender_id}fail."
        return None
