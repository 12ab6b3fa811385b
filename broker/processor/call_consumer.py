"""Requests the broker forwards to one online consumer and whose answer it relays: what
``mqadmin consumerStatus`` and the RocketMQ dashboard use to look inside a consumer
(GET_CONSUMER_RUNNING_INFO) and to have it consume one stored message again
(CONSUME_MESSAGE_DIRECTLY), as Java's AdminBrokerProcessor.callConsumer does.

The consumer is found by group and client id among the connections that heartbeat to this
broker; the request goes to it with the caller's fields (and, for CONSUME_MESSAGE_DIRECTLY,
the stored record as the body and this broker's name), and its response comes back as is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remoting import message as codec
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError, RemotingTimeoutError

if TYPE_CHECKING:
    from broker.controller import BrokerController

CALL_CLIENT_TIMEOUT_S = 10.0  # Java's Broker2Client.callClient


class ConsumerCallProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.running_info)
        server.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self.consume_directly)

    def running_info(self, connection: Any, request: RemotingCommand) -> Any:
        return self._call(request, dict(request.ext_fields or {}), request.body)

    def consume_directly(self, connection: Any, request: RemotingCommand) -> Any:
        fields = dict(request.ext_fields or {})
        fields["brokerName"] = self.broker.config.broker_name
        body: Any = b""
        try:
            phys_offset = codec.decode_offset_msg_id(fields.get("msgId") or "").phys_offset
        except ValueError:
            phys_offset = None  # Java sends the request on without a body, and so do we
        if phys_offset is not None:
            record = self.broker.store.look_message_by_offset(phys_offset)
            body = bytes(record) if record is not None else b""
        return self._call(request, fields, body)

    def _call(self, request: RemotingCommand, fields: dict[str, str], body: Any) -> Any:
        group, client_id = fields.get("consumerGroup"), fields.get("clientId")
        if not group:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, "the request has no consumerGroup"
            )
        info = self.broker.clients.consumer_groups.get(group)
        channel = None
        if info is not None:
            channel = next((c for c in info.channels.values() if c.client_id == client_id), None)
        if channel is None:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online"
            )
        return self._relay(request, channel.channel, fields, body, group, client_id)

    async def _relay(
        self,
        request: RemotingCommand,
        channel: Any,
        fields: dict[str, str],
        body: Any,
        group: str,
        client_id: str | None,
    ) -> RemotingCommand:
        forwarded = RemotingCommand.request(request.code, fields, body)
        try:
            answer = await channel.invoke(forwarded, CALL_CLIENT_TIMEOUT_S)
        except RemotingTimeoutError as exc:
            return request.error_response(
                ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {exc}"
            )
        except (RemotingError, OSError) as exc:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {exc}",
            )
        return request.make_response(answer.code, answer.remark, answer.ext_fields, answer.body)
