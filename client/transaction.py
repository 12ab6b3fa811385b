"""TransactionMQProducer: send a half message, run the local transaction, then commit or roll
back with END_TRANSACTION; answer the broker's CHECK_TRANSACTION_STATE for halves whose outcome
it never heard (the application's ``check_local_transaction`` decides)."""

from __future__ import annotations

import enum
import inspect
import logging
from typing import Any, Protocol

import attrs

from client.instance import MQClientInstance
from client.message import Message, SendResult, SendStatus
from client.producer import Producer
from remoting import message as codec
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.message import MessageConst, MessageExt

log = logging.getLogger(__name__)

PREPARED_FLAG = codec.TRANSACTION_PREPARED_TYPE


class LocalTransactionState(enum.Enum):
    COMMIT_MESSAGE = codec.TRANSACTION_COMMIT_TYPE
    ROLLBACK_MESSAGE = codec.TRANSACTION_ROLLBACK_TYPE
    UNKNOW = 0  # RocketMQ's spelling


class TransactionListener(Protocol):
    def execute_local_transaction(self, msg: Message, arg: Any) -> Any: ...

    def check_local_transaction(self, msg: MessageExt) -> Any: ...


@attrs.frozen
class TransactionSendResult:
    send_result: SendResult
    local_state: LocalTransactionState


async def _call(fn: Any, *args: Any) -> LocalTransactionState:
    try:
        state = fn(*args)
        if inspect.isawaitable(state):
            state = await state
    except Exception:
        log.exception("transaction listener raised: state UNKNOW")
        return LocalTransactionState.UNKNOW
    return state if isinstance(state, LocalTransactionState) else LocalTransactionState.UNKNOW


class TransactionProducer(Producer):
    def __init__(
        self, instance: MQClientInstance, group: str, listener: TransactionListener, **kw: Any
    ):
        super().__init__(instance, group, **kw)
        self.listener = listener
        instance.register_server_request(RequestCode.CHECK_TRANSACTION_STATE, self._check)

    async def send_message_in_transaction(
        self, msg: Message, arg: Any = None
    ) -> TransactionSendResult:
        if msg.delay_level > 0:
            from client.errors import MQClientError

            raise MQClientError("delayed messages cannot be transactional")
        msg.properties[MessageConst.TRAN_MSG] = "true"
        msg.properties[MessageConst.PGROUP] = self.group
        result = await self.send(msg, sys_flag=PREPARED_FLAG)
        if result.status is SendStatus.SEND_OK:
            state = await _call(self.listener.execute_local_transaction, msg, arg)
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        await self._end(result, state)
        return TransactionSendResult(result, state)

    async def _end(self, result: SendResult, state: LocalTransactionState) -> None:
        addr = self.instance.find_master(result.message_queue.broker_name)
        if addr is None:
            log.warning("no master for %s: the broker will check back", result.message_queue)
            return
        fields = {
            "producerGroup": self.group,
            "tranStateTableOffset": str(result.queue_offset),
            "commitLogOffset": str(codec.decode_offset_msg_id(result.offset_msg_id).phys_offset),
            "commitOrRollback": str(state.value),
            "fromTransactionCheck": "false",
            "msgId": result.msg_id,
            "transactionId": result.msg_id,
        }
        request = self.instance.request(RequestCode.END_TRANSACTION, fields, oneway=True)
        await self.instance.invoke_oneway(addr, request)

    async def _check(self, connection: Any, request: RemotingCommand) -> None:
        msg = codec.decode_message(request.body)
        state = await _call(self.listener.check_local_transaction, msg)
        fields = {
            "producerGroup": self.group,
            "tranStateTableOffset": request.ext("tranStateTableOffset") or "0",
            "commitLogOffset": request.ext("commitLogOffset") or "0",
            "commitOrRollback": str(state.value),
            "fromTransactionCheck": "true",
            "msgId": request.ext("msgId") or msg.msg_id,
            "transactionId": request.ext("transactionId") or msg.msg_id,
        }
        connection.send_nowait(
            RemotingCommand.request(
                RequestCode.END_TRANSACTION, fields, oneway=True, language="PYTHON"
            )
        )
