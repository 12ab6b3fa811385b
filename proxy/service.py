"""MessagingService over gRPC (grpcio's asyncio server): each RPC checks its request, hands
the remoting work to the Trio side through the bridge, and answers with a Status carrying an
``apache.rocketmq.v2.Code`` as RocketMQ's Proxy does (its activities under
proxy/grpc/v2/). A refusal is a Status in the response; the gRPC call itself succeeds."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from proxy.apis import service_pb2_grpc
from proxy.bridge import TrioBridge
from proxy.cluster import ClusterClient
from proxy.config import ProxyConfig
from proxy.consumer_service import ConsumerRpcs
from proxy.errors import ProxyError, ok, status_of
from proxy.metadata import client_id, peer_address
from proxy.pop import PopClient
from proxy.produce import plan_send, validate_topic
from proxy.route import endpoints_of, message_queues
from proxy.settings import merge_settings

log = logging.getLogger(__name__)


def _failed(exc: BaseException, what: str) -> pb.Status:
    if not isinstance(exc, ProxyError):
        log.warning("%s failed: %r", what, exc)
    return status_of(exc)


class MessagingService(ConsumerRpcs, service_pb2_grpc.MessagingServiceServicer):
    def __init__(self, config: ProxyConfig, bridge: TrioBridge, cluster: ClusterClient) -> None:
        super().__init__()
        self.config = config
        self.bridge = bridge
        self.cluster = cluster
        self.pops = PopClient(cluster)

    # ------------------------------------------------------------------ routes

    async def QueryRoute(self, request: rpc.QueryRouteRequest, context: Any):
        try:
            topic = validate_topic(request.topic)
            route = await self.bridge.call(self.cluster.route, topic)
        except Exception as exc:
            return rpc.QueryRouteResponse(status=_failed(exc, "QueryRoute"))
        endpoints = endpoints_of(request.endpoints, "127.0.0.1", self.config.grpc_server_port)
        queues = message_queues(request.topic, route, endpoints)
        return rpc.QueryRouteResponse(status=ok(), message_queues=queues)

    # ------------------------------------------------------------------ clients

    async def Heartbeat(self, request: rpc.HeartbeatRequest, context: Any):
        try:
            client_id(context)
            if request.client_type == pb.ClientType.CLIENT_TYPE_UNSPECIFIED:
                raise ProxyError(pb.Code.UNRECOGNIZED_CLIENT_TYPE, "unrecognized client type")
        except Exception as exc:
            return rpc.HeartbeatResponse(status=_failed(exc, "Heartbeat"))
        return rpc.HeartbeatResponse(status=ok())

    async def NotifyClientTermination(self, request, context: Any):
        try:
            client_id(context)
        except Exception as exc:
            return rpc.NotifyClientTerminationResponse(
                status=_failed(exc, "NotifyClientTermination")
            )
        return rpc.NotifyClientTerminationResponse(status=ok())

    async def Telemetry(
        self, request_iterator: AsyncIterator[rpc.TelemetryCommand], context: Any
    ) -> AsyncIterator[rpc.TelemetryCommand]:
        try:
            client = client_id(context)
        except ProxyError as exc:
            yield rpc.TelemetryCommand(status=status_of(exc))
            return
        async for command in request_iterator:
            which = command.WhichOneof("command")
            if which == "settings":
                settings = command.settings
                if settings.HasField("publishing"):
                    for topic in settings.publishing.topics:
                        if topic.name:
                            await self.bridge.call(self._producer_group, topic.name)
                merged = merge_settings(settings, self.config)
                self.remember_settings(client, merged)
                yield rpc.TelemetryCommand(status=ok(), settings=merged)
            elif which is None:
                yield rpc.TelemetryCommand(
                    status=pb.Status(code=pb.Code.BAD_REQUEST, message="telemetry command is empty")
                )
            # results of commands we sent (thread stacks, verify results) need no answer

    async def _producer_group(self, group: str) -> None:
        self.cluster.add_producer_group(group)

    # ------------------------------------------------------------------ producers

    async def SendMessage(self, request: rpc.SendMessageRequest, context: Any):
        try:
            plan = plan_send(
                list(request.messages), self.config, peer_address(context), int(time.time() * 1000)
            )
            outcome = await self.bridge.call(self.cluster.send, plan)
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
