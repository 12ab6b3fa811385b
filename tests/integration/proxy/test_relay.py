"""A broker's calls for a 5.x consumer relayed over its Telemetry stream (raw gRPC playing the
client, answering as RocketMQ's Java SDK does: rocketmq-python-client 5.1.2 ignores both
commands): ``consumeMessageDirectly`` becomes a VerifyMessageCommand carrying the stored
message and its result comes back as CR_SUCCESS; ``consumerStatus -s`` a
PrintThreadStackTraceCommand whose stack comes back as the running info's jstack."""

from __future__ import annotations

import queue
import threading

import pytest
import trio

from client.admin import AdminClient
from client.errors import MQBrokerError, MQClientError
from client.message import Message
from client.producer import Producer
from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from remoting.body import CMResult
from tests.integration.proxy.proxykit import create_topic, run_sdk, stub
from tests.kits.hakit import wait_until


class RawConsumer:
    """A Telemetry stream of a SimpleConsumer of ``group`` that answers what the proxy asks."""

    def __init__(self, proxy, group: str, topic: str) -> None:
        entry = pb.SubscriptionEntry(
            topic=pb.Resource(name=topic),
            expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        )
        settings = pb.Settings(
            client_type=pb.ClientType.SIMPLE_CONSUMER,
            subscription=pb.Subscription(group=pb.Resource(name=group), subscriptions=[entry]),
        )
        self.outgoing: queue.Queue = queue.Queue()
        self.outgoing.put(rpc.TelemetryCommand(settings=settings))
        self.asked: list[rpc.TelemetryCommand] = []
        self.call = stub(proxy).Telemetry(
            iter(self.outgoing.get, None), metadata=(("x-mq-client-id", f"raw-{group}@1"),)
        )
        self.thread = threading.Thread(target=self._answer, daemon=True)
        self.thread.start()

    def _answer(self) -> None:
        ok = pb.Status(code=pb.Code.OK)
        try:
            for command in self.call:
                which = command.WhichOneof("command")
                if which == "verify_message_command":
                    self.asked.append(command)
                    result = rpc.VerifyMessageResult(nonce=command.verify_message_command.nonce)
                    self.outgoing.put(rpc.TelemetryCommand(status=ok, verify_message_result=result))
                elif which == "print_thread_stack_trace_command":
                    self.asked.append(command)
                    trace = rpc.ThreadStackTrace(
                        nonce=command.print_thread_stack_trace_command.nonce,
                        thread_stack_trace='"main" RUNNABLE',
                    )
                    self.outgoing.put(rpc.TelemetryCommand(status=ok, thread_stack_trace=trace))
        except Exception:  # the call cancelled at the end of the test
            pass

    def close(self) -> None:
        self.outgoing.put(None)
        self.call.cancel()
        self.thread.join(10)


async def test_verify_message_and_thread_stack_reach_the_client_and_come_back(
    proxy_cluster,
) -> None:
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "RelayT")
    consumer = await trio.to_thread.run_sync(RawConsumer, proxy, "RelayCG", "RelayT")
    try:
        async with AdminClient.open(ns.addr) as admin:

            async def registered() -> bool:
                try:
                    found = await admin.consumer_connection("RelayCG", broker.addr)
                except MQClientError:
                    return False
                return bool(found.connection_set)

            await wait_until(registered, 30, "the 5.x group registered at the broker")
            found = await admin.consumer_connection("RelayCG", broker.addr)
            client_id = next(iter(found.connection_set)).client_id
            async with Producer.open(ns.addr, "PGRelay") as producer:
                sent = await producer.send(Message("RelayT", b"verify me", tags="V"))
            result = await admin.consume_message_directly("RelayCG", client_id, sent.offset_msg_id)
            assert result.consume_result == CMResult.CR_SUCCESS
            assert result.remark == "from gRPC client"
            info = await admin.consumer_running_info(
                "RelayCG", client_id, jstack=True, addr=broker.addr
            )
            assert info.jstack == '"main" RUNNABLE'
    finally:
        await trio.to_thread.run_sync(consumer.close)
    [verify, _] = consumer.asked
    message = verify.verify_message_command.message
    assert message.body == b"verify me" and message.system_properties.tag == "V"
    assert message.system_properties.message_id == sent.msg_id


@pytest.mark.slow
async def test_the_python_sdk_ignores_a_verify_and_the_admin_is_told(proxy_cluster) -> None:
    """rocketmq-python-client 5.1.2 drops VerifyMessageCommand: the proxy answers the broker
    after 4 s that the client did not answer, before mqadmin's own 5 s run out."""
    ns, broker, proxy = proxy_cluster
    await create_topic(ns.addr, "RelaySdkT")
    await create_topic(ns.addr, "RelaySdkOther")  # the message verified: not the SDK's to pop
    job = {
        "op": "consume",
        "endpoints": f"127.0.0.1:{proxy.port}",
        "group": "RelaySdkCG",
        "topic": "RelaySdkT",
        "count": 1,
        "deadline_s": 60,
    }
    async with trio.open_nursery() as nursery, AdminClient.open(ns.addr) as admin:
        nursery.start_soon(run_sdk, job)

        async def registered() -> bool:
            try:
                return bool(
                    (await admin.consumer_connection("RelaySdkCG", broker.addr)).connection_set
                )
            except MQClientError:
                return False

        await wait_until(registered, 30, "the SDK's group registered at the broker")
        found = await admin.consumer_connection("RelaySdkCG", broker.addr)
        client_id = next(iter(found.connection_set)).client_id
        async with Producer.open(ns.addr, "PGRelaySdk") as producer:
            sent = await producer.send(Message("RelaySdkOther", b"x"))
        with pytest.raises(MQBrokerError, match="did not answer"):
            await admin.consume_message_directly("RelaySdkCG", client_id, sent.offset_msg_id)
        nursery.cancel_scope.cancel()
