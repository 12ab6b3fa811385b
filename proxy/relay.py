"""A broker's requests for a 5.x consumer, put to it over its Telemetry stream and answered
from what it sends back, as RocketMQ 5's Proxy relays them (GrpcClientChannel,
ClientActivity.reportVerifyMessageResult / reportThreadStackTrace): CONSUME_MESSAGE_DIRECTLY
(``mqadmin consumeMessageDirectly``) becomes a VerifyMessageCommand, GET_CONSUMER_RUNNING_INFO
with jstackEnable (``mqadmin consumerStatus -s``) a PrintThreadStackTraceCommand; each carries a
nonce the client's answer repeats.

RocketMQ relays them only in local mode; mqproxy heartbeats its clients' consumer groups to
the brokers (so admin tools see them) and relays them too. The broker addressed the proxy's
own client id, so the command goes to one client of the group with a Telemetry stream.

``answer_of`` and the two ``*_response`` builders are pure; ``ClientCommands`` holds the
commands awaiting an answer (asyncio side)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from proxy.consume import to_proto_message
from proxy.telemetry import TelemetryStreams
from remoting import message as codec
from remoting.body import CMResult, ConsumeMessageDirectlyResult, ConsumerRunningInfo
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import encode_body

log = logging.getLogger(__name__)

MAX_PENDING = 1024  # commands awaiting an answer: each holds a broker's request open
ANSWER_TIMEOUT_S = (
    4.0  # inside mqadmin's 5 s (DefaultMQAdminExt timeoutMillis; the broker waits 10)
)

_CONSUME_RESULTS = {
    pb.Code.OK: CMResult.CR_SUCCESS,
    pb.Code.FAILED_TO_CONSUME_MESSAGE: CMResult.CR_LATER,
    pb.Code.MESSAGE_CORRUPTED: CMResult.CR_RETURN_NULL,
}


def answer_of(command: rpc.TelemetryCommand) -> str | None:
    """The nonce a client's Telemetry command answers, if it answers one: a
    VerifyMessageResult, a ThreadStackTrace, or (rocketmq-client-nodejs) the VerifyMessageCommand
    sent back with a status."""
    which = command.WhichOneof("command")
    if which == "verify_message_result":
        return command.verify_message_result.nonce
    if which == "thread_stack_trace":
        return command.thread_stack_trace.nonce
    if which == "verify_message_command":
        return command.verify_message_command.nonce
    return None


def consume_directly_response(
    request: RemotingCommand, answer: rpc.TelemetryCommand
) -> RemotingCommand:
    """buildConsumeMessageDirectlyResult: the client's status as a CMResult (none for a code
    it does not name), remark "from gRPC client"."""
    result = ConsumeMessageDirectlyResult(
        consume_result=_CONSUME_RESULTS.get(answer.status.code), remark="from gRPC client"
    )
    return request.make_response(body=encode_body(result))


def running_info_response(
    request: RemotingCommand, answer: rpc.TelemetryCommand
) -> RemotingCommand:
    """reportThreadStackTrace: the stack as the running info's jstack when the client said OK."""
    code = answer.status.code
    if code == pb.Code.OK:
        info = ConsumerRunningInfo(jstack=answer.thread_stack_trace.thread_stack_trace)
        return request.make_response(body=encode_body(info))
    if code == pb.Code.VERIFY_FIFO_MESSAGE_UNSUPPORTED:
        return request.error_response(ResponseCode.NO_PERMISSION, "forbidden to verify message")
    return request.error_response(ResponseCode.SYSTEM_ERROR, "verify message failed")


class ClientCommands:
    """Commands put to clients' Telemetry outboxes, by nonce, until answered or timed out."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self._pending: dict[str, asyncio.Future[rpc.TelemetryCommand]] = {}
        self._max_pending = max_pending
        self._nonces = itertools.count(1)

    async def ask(
        self,
        outbox: asyncio.Queue,
        command: Callable[[str], rpc.TelemetryCommand],
        timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> rpc.TelemetryCommand | None:
        """``command(nonce)`` put to ``outbox``; the client's answer, or None when the outbox
        is full, too many are pending, or no answer came within ``timeout_s``."""
        if len(self._pending) >= self._max_pending:
            return None
        nonce = f"proxy-{next(self._nonces)}"
        future: asyncio.Future[rpc.TelemetryCommand] = asyncio.get_running_loop().create_future()
        self._pending[nonce] = future
        try:
            outbox.put_nowait(command(nonce))
            return await asyncio.wait_for(future, timeout_s)
        except (asyncio.QueueFull, TimeoutError):
            return None
        finally:
            self._pending.pop(nonce, None)

    def answered(self, command: rpc.TelemetryCommand) -> bool:
        """True when ``command`` answers one awaiting (it is then consumed here)."""
        nonce = answer_of(command)
        future = self._pending.pop(nonce, None) if nonce else None
        if future is None:
            return False
        if not future.done():
            future.set_result(command)
        return True


async def relay(
    request: RemotingCommand, streams: TelemetryStreams, commands: ClientCommands
) -> RemotingCommand:
    """A broker's CONSUME_MESSAGE_DIRECTLY or GET_CONSUMER_RUNNING_INFO, answered by a client
    of its consumerGroup (asyncio side)."""
    fields = request.ext_fields or {}
    group = fields.get("consumerGroup") or ""
    outbox = streams.of_group(group)
    if outbox is None:
        return request.error_response(
            ResponseCode.SYSTEM_ERROR, f"no 5.x consumer of {group} is connected to the proxy"
        )
    if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
        try:
            message = to_proto_message(codec.decode_message(request.body), "", 0)
        except ValueError as exc:
            return request.error_response(ResponseCode.SYSTEM_ERROR, f"no message to verify: {exc}")

        def verify(nonce: str) -> rpc.TelemetryCommand:
            command = rpc.VerifyMessageCommand(nonce=nonce, message=message)
            return rpc.TelemetryCommand(verify_message_command=command)

        answer = await commands.ask(outbox, verify)
        build = consume_directly_response
    else:
        if fields.get("jstackEnable") != "true":
            # GrpcClientChannel asks a 5.x client for its thread stack only
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, "a 5.x client reports its thread stack only (jstack)"
            )

        def stack(nonce: str) -> rpc.TelemetryCommand:
            command = rpc.PrintThreadStackTraceCommand(nonce=nonce)
            return rpc.TelemetryCommand(print_thread_stack_trace_command=command)

        answer = await commands.ask(outbox, stack)
        build = running_info_response
    if answer is None:
        return request.error_response(
            ResponseCode.SYSTEM_ERROR, f"the 5.x consumer of {group} did not answer"
        )
    return build(request, answer)
