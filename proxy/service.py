"""MessagingService over gRPC (grpcio's asyncio server): each RPC checks its request, hands
the remoting work to the Trio side through the bridge, and answers with a Status carrying an
``apache.rocketmq.v2.Code`` as RocketMQ's Proxy does (its activities under
proxy/grpc/v2/). A refusal is a Status in the response; the gRPC call itself succeeds."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from proxy.apis import service_pb2_grpc
from proxy.bridge import TrioBridge, from_trio
from proxy.cluster import ClusterClient
from proxy.config import ProxyConfig
from proxy.consume import to_proto_message
from proxy.consumer_service import ConsumerRpcs
from proxy.errors import ProxyError, ok, status_of
from proxy.group_config import GroupConfigs, fetch_group_config
from proxy.liveness import ClientLiveness
from proxy.metadata import client_id, peer_address
from proxy.pop import PopClient
from proxy.produce import plan_send, validate_topic
from proxy.relay import ClientCommands, relay
from proxy.renew import Renewer
from proxy.route import accepted, endpoints_of, message_queues
from proxy.settings import consumer_data
from proxy.telemetry import MAX_TOPICS_PER_STREAM, TelemetryStreams
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.message import MessageExt
from remoting.names import topic_problem

log = logging.getLogger(__name__)


def _failed(exc: BaseException, what: str) -> pb.Status:
    if not isinstance(exc, ProxyError):
        log.warning("%s failed: %r", what, exc)
    return status_of(exc)


class MessagingService(ConsumerRpcs, service_pb2_grpc.MessagingServiceServicer):
    def __init__(self, config: ProxyConfig, bridge: TrioBridge, remoting: Any) -> None:
        """``remoting``: what the Trio thread opened (__main__.Remoting)."""
        super().__init__()
        self.config = config
        self.bridge = bridge
        self.cluster: ClusterClient = remoting.cluster
        self.pops: PopClient = remoting.pops
        self.renewer: Renewer = remoting.renewer
        self.liveness: ClientLiveness = remoting.liveness
        cluster = self.cluster
        self.streams = TelemetryStreams()
        name = config.rocketmq_cluster_name
        self.groups = GroupConfigs(
            lambda group: bridge.call(fetch_group_config, self.cluster, name, group)
        )
        self.loop = asyncio.get_running_loop()
        # a dict entry in the remoting client's processor table, set before any broker can
        # connect back: safe from this thread
        cluster.on_transaction_check(self._ask_producer)
        self.commands = ClientCommands()
        for code in (RequestCode.CONSUME_MESSAGE_DIRECTLY, RequestCode.GET_CONSUMER_RUNNING_INFO):
            cluster.instance.register_server_request(code, self._broker_call)

    # ------------------------------------------------------------------ routes

    async def QueryRoute(self, request: rpc.QueryRouteRequest, context: Any):
        try:
            topic = validate_topic(request.topic)
            route = await self.bridge.call(self.cluster.route, topic)
            kind = await self.bridge.call(self.cluster.topic_message_type, topic)
        except Exception as exc:
            return rpc.QueryRouteResponse(status=_failed(exc, "QueryRoute"))
        endpoints = endpoints_of(request.endpoints, "127.0.0.1", self.config.grpc_server_port)
        queues = message_queues(request.topic, route, endpoints, accepted(kind))
        return rpc.QueryRouteResponse(status=ok(), message_queues=queues)

    # ------------------------------------------------------------------ clients

    async def Heartbeat(self, request: rpc.HeartbeatRequest, context: Any):
        try:
            client = client_id(context)
            if request.client_type == pb.ClientType.CLIENT_TYPE_UNSPECIFIED:
                raise ProxyError(pb.Code.UNRECOGNIZED_CLIENT_TYPE, "unrecognized client type")
            await self.bridge.call(self.liveness.seen, client)
        except Exception as exc:
            return rpc.HeartbeatResponse(status=_failed(exc, "Heartbeat"))
        return rpc.HeartbeatResponse(status=ok())

    async def NotifyClientTermination(self, request, context: Any):
        try:
            client = client_id(context)
            # its messages being consumed go back to the group soon, not after their 60 s
            await self.bridge.call(self.liveness.left, client)
        except Exception as exc:
            return rpc.NotifyClientTerminationResponse(
                status=_failed(exc, "NotifyClientTermination")
            )
        return rpc.NotifyClientTerminationResponse(status=ok())

    async def Telemetry(
        self, request_iterator: AsyncIterator[rpc.TelemetryCommand], context: Any
    ) -> AsyncIterator[rpc.TelemetryCommand]:
        """Answers the client's settings, and puts the broker's transaction check-backs to
        producers: a reader task turns what the client sends into answers in the stream's
        outbox, which also takes check-backs; this generator writes the outbox out."""
        try:
            client = client_id(context)
        except ProxyError as exc:
            yield rpc.TelemetryCommand(status=status_of(exc))
            return
        outbox = self.streams.open()

        async def read() -> None:
            try:
                async for command in request_iterator:
                    answer = await self._telemetry_answer(client, command, outbox)
                    if answer is not None:
                        await outbox.put(answer)
            finally:  # the client closed its side (or the call ended): stop the writer
                with contextlib.suppress(asyncio.CancelledError):
                    await outbox.put(None)

        reader = asyncio.create_task(read())
        try:
            while (command := await outbox.get()) is not None:
                yield command
        finally:
            reader.cancel()
            self.streams.close(outbox)

    async def _telemetry_answer(
        self, client: str, command: rpc.TelemetryCommand, outbox: asyncio.Queue
    ) -> rpc.TelemetryCommand | None:
        if self.commands.answered(command):  # a verify result or a thread stack
            return None
        which = command.WhichOneof("command")
        if which == "settings":
            settings = command.settings
            if settings.HasField("publishing"):
                topics = [t.name for t in settings.publishing.topics if not topic_problem(t.name)]
                self.streams.publishes(outbox, topics)
                await self.bridge.call(
                    self.cluster.add_producer_groups, topics[:MAX_TOPICS_PER_STREAM]
                )
            await self.bridge.call(self.liveness.seen, client)
            consumer = consumer_data(settings)
            if consumer is not None:
                self.streams.consumes(outbox, consumer.group_name)
                await self.bridge.call(self.cluster.consumer_joined, client, consumer)
            merged = await self.merged_settings(settings)
            self.remember_settings(client, settings)
            return rpc.TelemetryCommand(status=ok(), settings=merged)
        if which is None:
            status = pb.Status(code=pb.Code.BAD_REQUEST, message="telemetry command is empty")
            return rpc.TelemetryCommand(status=status)
        return None  # results of commands we sent (thread stacks, verify results)

    async def _broker_call(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        """In the Trio thread: a broker's call for a 5.x consumer, relayed on the asyncio side."""
        return await from_trio(self.loop, relay(request, self.streams, self.commands))

    def _ask_producer(self, group: str, message: MessageExt, transaction_id: str) -> None:
        """In the Trio thread: a broker's check-back, handed to the asyncio loop."""
        proto = to_proto_message(message, "", 0)
        command = rpc.TelemetryCommand(
            recover_orphaned_transaction_command=rpc.RecoverOrphanedTransactionCommand(
                message=proto, transaction_id=transaction_id
            )
        )

        def ask() -> None:
            if not self.streams.ask(group, command):
                log.info(
                    "transaction check of %s: no producer of %s connected", transaction_id, group
                )

        self.loop.call_soon_threadsafe(ask)

    # ------------------------------------------------------------------ producers

    async def SendMessage(self, request: rpc.SendMessageRequest, context: Any):
        try:
            plan = plan_send(
                list(request.messages), self.config, peer_address(context), int(time.time() * 1000)
            )
            check = self.config.enable_topic_message_type_check
            outcome = await self.bridge.call(self.cluster.send, plan, check)
        except Exception as exc:
            status = _failed(exc, "SendMessage")
            return rpc.SendMessageResponse(
                status=status, entries=[rpc.SendResultEntry(status=status)]
            )
        status = pb.Status(code=outcome.code, message=outcome.message)
        if outcome.code != pb.Code.OK:
            return rpc.SendMessageResponse(
                status=status, entries=[rpc.SendResultEntry(status=status)]
            )
        entries = [
            rpc.SendResultEntry(
                status=status,
                message_id=message.message_id,
                transaction_id=outcome.transaction_id,
                offset=outcome.queue_offset + index,
            )
            for index, message in enumerate(plan.messages)
        ]
        return rpc.SendMessageResponse(status=status, entries=entries)

    async def EndTransaction(self, request: rpc.EndTransactionRequest, context: Any):
        try:
            topic = validate_topic(request.topic)
            if not request.transaction_id:
                raise ProxyError(pb.Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
            resolution = request.resolution
            if resolution not in (
                pb.TransactionResolution.COMMIT,
                pb.TransactionResolution.ROLLBACK,
            ):
                # UNSPECIFIED: the SDK does not know yet; the broker will check back
                return rpc.EndTransactionResponse(status=ok())
            await self.bridge.call(
                self.cluster.end_transaction,
                topic,
                request.transaction_id,
                request.message_id,
                resolution == pb.TransactionResolution.COMMIT,
                request.source == pb.TransactionSource.SOURCE_SERVER_CHECK,
            )
        except Exception as exc:
            return rpc.EndTransactionResponse(status=_failed(exc, "EndTransaction"))
        return rpc.EndTransactionResponse(status=ok())
