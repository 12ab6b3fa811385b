"""The relay of a broker's calls to a 5.x client (proxy/relay.py): answers matched by nonce,
the client's status as RocketMQ's Proxy turns it into a remoting response, and the bounds on
commands awaiting an answer."""

from __future__ import annotations

import asyncio

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from proxy.relay import (
    ClientCommands,
    answer_of,
    consume_directly_response,
    running_info_response,
)
from remoting.body import CMResult, ConsumeMessageDirectlyResult, ConsumerRunningInfo
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body


def verified(code: int, nonce: str = "n") -> rpc.TelemetryCommand:
    return rpc.TelemetryCommand(
        status=pb.Status(code=code), verify_message_result=rpc.VerifyMessageResult(nonce=nonce)
    )


def test_the_clients_status_becomes_the_consume_result() -> None:
    request = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, {})
    for code, result in [
        (pb.Code.OK, CMResult.CR_SUCCESS),
        (pb.Code.FAILED_TO_CONSUME_MESSAGE, CMResult.CR_LATER),
        (pb.Code.MESSAGE_CORRUPTED, CMResult.CR_RETURN_NULL),
        (pb.Code.NOT_IMPLEMENTED, None),  # rocketmq-client-nodejs 1.0.8's answer
    ]:
        response = consume_directly_response(request, verified(code))
        body = decode_body(ConsumeMessageDirectlyResult, response.body)
        assert response.code == ResponseCode.SUCCESS
        assert (body.consume_result, body.remark) == (result, "from gRPC client")


def test_a_thread_stack_becomes_the_running_infos_jstack() -> None:
    request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {})
    trace = rpc.ThreadStackTrace(nonce="n", thread_stack_trace="stack")
    ok = rpc.TelemetryCommand(status=pb.Status(code=pb.Code.OK), thread_stack_trace=trace)
    response = running_info_response(request, ok)
    assert decode_body(ConsumerRunningInfo, response.body).jstack == "stack"
    fifo = rpc.TelemetryCommand(status=pb.Status(code=pb.Code.VERIFY_FIFO_MESSAGE_UNSUPPORTED))
    assert running_info_response(request, fifo).code == ResponseCode.NO_PERMISSION
    failed = rpc.TelemetryCommand(status=pb.Status(code=pb.Code.INTERNAL_ERROR))
    assert running_info_response(request, failed).code == ResponseCode.SYSTEM_ERROR


def test_answers_are_matched_by_nonce_and_the_rest_bounded() -> None:
    async def scenario() -> None:
        commands = ClientCommands(max_pending=1)
        outbox: asyncio.Queue = asyncio.Queue(1)

        def ask(nonce: str) -> rpc.TelemetryCommand:
            command = rpc.PrintThreadStackTraceCommand(nonce=nonce)
            return rpc.TelemetryCommand(print_thread_stack_trace_command=command)

        task = asyncio.create_task(commands.ask(outbox, ask, timeout_s=5))
        sent = await outbox.get()
        nonce = sent.print_thread_stack_trace_command.nonce
        assert answer_of(sent) is None  # a command, not an answer
        # while one waits, a second is refused at once (max_pending)
        assert await commands.ask(asyncio.Queue(1), ask, timeout_s=5) is None
        assert not commands.answered(verified(pb.Code.OK, nonce="someone else's"))
        trace = rpc.ThreadStackTrace(nonce=nonce, thread_stack_trace="s")
        answer = rpc.TelemetryCommand(thread_stack_trace=trace)
        assert commands.answered(answer)
        assert await task is answer
        # the nodejs SDK sends the command back with its status: that answers too
        task = asyncio.create_task(commands.ask(outbox, ask, timeout_s=5))
        nonce = (await outbox.get()).print_thread_stack_trace_command.nonce
        back = rpc.TelemetryCommand(verify_message_command=rpc.VerifyMessageCommand(nonce=nonce))
        assert commands.answered(back) and await task is back
        # no answer: None after the timeout; a full outbox: None at once
        assert await commands.ask(outbox, ask, timeout_s=0.01) is None
        assert await commands.ask(outbox, ask, timeout_s=5) is None  # still full

    asyncio.run(scenario())
