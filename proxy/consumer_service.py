"""MessagingService's consumer RPCs (RocketMQ 5's QueryAssignment in RouteActivity,
ReceiveMessageActivity, AckMessageActivity, ChangeInvisibleDurationActivity,
ForwardMessageToDLQActivity) over pop consumption in the brokers."""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from proxy.apis import definition_pb2 as pb
from proxy.apis import service_pb2 as rpc
from proxy.bridge import TrioBridge
from proxy.config import ProxyConfig
from proxy.consume import (
    MAX_BATCH,
    MIN_INVISIBLE_MS_FOR_RECEIVE,
    ReceiptHandle,
    duration_ms,
    filter_expression,
    parse_receipt_handle,
    polling_ms,
    to_proto_message,
    validate_group,
    validate_invisible_ms,
)
from proxy.errors import ProxyError, ok, status_of
from proxy.group_config import GroupConfigs
from proxy.metadata import client_id
from proxy.pop import PopClient, PopRequest
from proxy.produce import validate_topic
from proxy.renew import Held, Renewer
from proxy.route import MASTER_ID
from proxy.settings import CONSUMER_MAX_ATTEMPTS, merge_settings
from remoting.names import group_problem

log = logging.getLogger(__name__)

MAX_CLIENTS = 10_000
MAX_ACK_ENTRIES = (
    4 * MAX_BATCH
)  # an ack carries at most a few receives' messages  # settings remembered per client id (the oldest forgotten past it)
DEFAULT_REQUEST_TIMEOUT_MS = 3_000


def _now_ms() -> int:
    return int(time.time() * 1000)


def _delivered_now() -> rpc.ReceiveMessageResponse:
    response = rpc.ReceiveMessageResponse()
    response.delivery_timestamp.FromMilliseconds(_now_ms())
    return response


def _failed(exc: BaseException, what: str) -> pb.Status:
    if not isinstance(exc, ProxyError):
        log.warning("%s failed: %r", what, exc)
    return status_of(exc)


class ConsumerRpcs:
    config: ProxyConfig
    bridge: TrioBridge
    pops: PopClient
    renewer: Renewer
    groups: GroupConfigs

    def __init__(self) -> None:
        self.client_settings: collections.OrderedDict[str, pb.Settings] = collections.OrderedDict()

    def remember_settings(self, client: str, settings: pb.Settings) -> None:
        """What the client reported; merged with the proxy's policy and its group's config
        whenever they are used, so a group changed at the broker counts from the next receive."""
        self.client_settings[client] = settings
        self.client_settings.move_to_end(client)
        while len(self.client_settings) > MAX_CLIENTS:
            self.client_settings.popitem(last=False)

    async def merged_settings(self, reported: pb.Settings, group: str | None = None) -> pb.Settings:
        """GrpcClientSettingsManager.getClientSettings: a consumer's with the config of its
        group (``group``, else the one it reported)."""
        config = None
        if reported.HasField("subscription") and not reported.HasField("publishing"):
            name = group or reported.subscription.group.name
            if name and not group_problem(name):
                config = await self.groups.get(name)
        return merge_settings(reported, self.config, config)

    async def _receive_settings(self, context: Any, group: str) -> pb.Settings:
        """The receiving client's settings with ``group``'s config: a receive may come before
        its settings did (the Python SDK's SimpleConsumer does not wait for them)."""
        reported = self.client_settings.get(client_id(context))
        if reported is None:
            reported = pb.Settings(subscription=pb.Subscription(group=pb.Resource(name=group)))
        return await self.merged_settings(reported, group)

    async def QueryAssignment(self, request: rpc.QueryAssignmentRequest, context: Any):
        try:
            topic = validate_topic(request.topic)
            validate_group(request.group)
            route = await self.bridge.call(self.pops.cluster.route, topic)
        except Exception as exc:
            return rpc.QueryAssignmentResponse(status=_failed(exc, "QueryAssignment"))
        masters = {
            d.broker_name
            for d in route.broker_datas
            if MASTER_ID in {int(k) for k in d.broker_addrs}
        }
        assignments = []
        for queue in sorted(route.queue_datas, key=lambda q: q.broker_name):
            if queue.broker_name in masters and queue.perm & 4 and queue.read_queue_nums > 0:
                permission = pb.Permission.READ_WRITE if queue.perm & 2 else pb.Permission.READ
                broker = pb.Broker(
                    name=queue.broker_name, id=MASTER_ID, endpoints=request.endpoints
                )
                mq = pb.MessageQueue(
                    topic=request.topic, id=-1, permission=permission, broker=broker
                )
                assignments.append(pb.Assignment(message_queue=mq))
        if not assignments:
            status = pb.Status(code=pb.Code.FORBIDDEN, message="no readable queue")
            return rpc.QueryAssignmentResponse(status=status)
        return rpc.QueryAssignmentResponse(status=ok(), assignments=assignments)

    def _pop_request(
        self, request: rpc.ReceiveMessageRequest, context: Any, settings: pb.Settings
    ) -> PopRequest:
        timeout_ms = duration_ms(settings.request_timeout) or DEFAULT_REQUEST_TIMEOUT_MS
        remaining = context.time_remaining()
        requested = (
            duration_ms(request.long_polling_timeout)
            if request.HasField("long_polling_timeout")
            else None
        )
        polling = polling_ms(
            requested, int(remaining * 1000) if remaining is not None else None, timeout_ms
        )
        topic = validate_topic(request.message_queue.topic)
        group = validate_group(request.group)
        if request.auto_renew and self.config.enable_proxy_auto_renew:
            invisible = self.config.default_invisible_time_mills
        else:
            invisible = validate_invisible_ms(
                duration_ms(request.invisible_duration), MIN_INVISIBLE_MS_FOR_RECEIVE
            )
        exp_type, exp = filter_expression(request.filter_expression)
        if request.batch_size <= 0:
            raise ProxyError(pb.Code.BAD_REQUEST, "batch size must be positive")
        attempt = request.attempt_id if request.HasField("attempt_id") else None
        if attempt is not None and (len(attempt) > 128 or not attempt.isprintable()):
            raise ProxyError(pb.Code.BAD_REQUEST, "attempt id is malformed")
        return PopRequest(
            topic=topic,
            group=group,
            broker_name=request.message_queue.broker.name,
            batch=min(request.batch_size, MAX_BATCH),
            invisible_ms=invisible,
            polling_ms=polling,
            fifo=settings.subscription.fifo,
            max_attempts=settings.backoff_policy.max_attempts or CONSUMER_MAX_ATTEMPTS,
            exp_type=exp_type,
            exp=exp,
            attempt_id=attempt,
        )

    async def ReceiveMessage(
        self, request: rpc.ReceiveMessageRequest, context: Any
    ) -> AsyncIterator[rpc.ReceiveMessageResponse]:
        """A Status, the messages, then the time they left the proxy as the stream's last
        response (RocketMQ's ReceiveMessageResponseStreamWriter.onComplete since 5.3: the
        5.x SDKs' PushConsumer measures its receive latency from it)."""
        try:
            group = validate_group(request.group)
            settings = await self._receive_settings(context, group)
            pop = self._pop_request(request, context, settings)
            # the broker holds the pop up to pollTime; the remoting call waits a little longer
            popped = await self.bridge.call(self.pops.pop, pop, pop.polling_ms / 1000 + 3.0)
            if popped.messages and request.auto_renew and self.config.enable_proxy_auto_renew:
                await self.bridge.call(self.renewer.hold, self._held(pop, popped, context))
        except Exception as exc:
            yield rpc.ReceiveMessageResponse(status=_failed(exc, "ReceiveMessage"))
            yield _delivered_now()
            return
        yield rpc.ReceiveMessageResponse(status=pb.Status(code=popped.code, message=popped.message))
        for msg, handle in popped.messages:
            proto = to_proto_message(msg, handle.encode(), handle.extra.invisible_time)
            yield rpc.ReceiveMessageResponse(message=proto)
        yield _delivered_now()

    def _held(self, pop: PopRequest, popped: Any, context: Any) -> list[Held]:
        client, now = client_id(context), _now_ms()
        return [
            Held(client, pop.group, pop.topic, msg.msg_id, handle, now, msg.reconsume_times)
            for msg, handle in popped.messages
        ]

    # The client's ack, change and dead-lettering act on the handle the renewer holds for the
    # message when it holds one (the broker knows only the latest); these run in Trio.

    async def _ack(self, group: str, topic: str, message_id: str, handle: ReceiptHandle) -> int:
        current = await self.renewer.take(group, message_id, handle)
        if current.expired(_now_ms()):
            raise ProxyError(pb.Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")
        return await self.pops.ack(group, topic, current)

    async def _change(
        self, group: str, topic: str, message_id: str, handle: ReceiptHandle, invisible_ms: int
    ) -> ReceiptHandle:
        current = await self.renewer.take(group, message_id, handle)
        return await self.pops.change_invisible(group, topic, current, invisible_ms)

    async def _forward(self, group: str, topic: str, message_id: str, handle: ReceiptHandle) -> int:
        current = await self.renewer.take(group, message_id, handle)
        return await self.pops.forward_to_dlq(group, topic, current, message_id)

    async def AckMessage(self, request: rpc.AckMessageRequest, context: Any):
        try:
            topic = validate_topic(request.topic)
            group = validate_group(request.group)
            if not request.entries:
                raise ProxyError(pb.Code.BAD_REQUEST, "no entry to ack")
            if len(request.entries) > MAX_ACK_ENTRIES:
                raise ProxyError(pb.Code.BAD_REQUEST, f"more than {MAX_ACK_ENTRIES} entries")
        except Exception as exc:
            return rpc.AckMessageResponse(status=_failed(exc, "AckMessage"))
        results = []
        for entry in request.entries:
            try:
                handle = parse_receipt_handle(entry.receipt_handle)
                code = await self.bridge.call(self._ack, group, topic, entry.message_id, handle)
                status = pb.Status(code=code, message="OK" if code == pb.Code.OK else "ack failed")
            except Exception as exc:
                status = _failed(exc, "AckMessage")
            results.append(
                rpc.AckMessageResultEntry(
                    message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=status
                )
            )
        codes = {r.status.code for r in results}
        if len(codes) == 1:
            status = results[0].status
        else:
            status = pb.Status(code=pb.Code.MULTIPLE_RESULTS, message="MULTIPLE_RESULTS")
        return rpc.AckMessageResponse(status=status, entries=results)

    async def ChangeInvisibleDuration(
        self, request: rpc.ChangeInvisibleDurationRequest, context: Any
    ):
        try:
            topic = validate_topic(request.topic)
            group = validate_group(request.group)
            invisible = validate_invisible_ms(duration_ms(request.invisible_duration))
            handle = parse_receipt_handle(request.receipt_handle)
            renewed = await self.bridge.call(
                self._change, group, topic, request.message_id, handle, invisible
            )
        except Exception as exc:
            return rpc.ChangeInvisibleDurationResponse(
                status=_failed(exc, "ChangeInvisibleDuration")
            )
        return rpc.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=renewed.encode())

    async def ForwardMessageToDeadLetterQueue(
        self, request: rpc.ForwardMessageToDeadLetterQueueRequest, context: Any
    ):
        try:
            topic = validate_topic(request.topic)
            group = validate_group(request.group)
            handle = parse_receipt_handle(request.receipt_handle)
            await self.bridge.call(self._forward, group, topic, request.message_id, handle)
        except Exception as exc:
            status = _failed(exc, "ForwardMessageToDeadLetterQueue")
            return rpc.ForwardMessageToDeadLetterQueueResponse(status=status)
        return rpc.ForwardMessageToDeadLetterQueueResponse(status=ok())
