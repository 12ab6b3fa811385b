"""The consumer RPCs' remoting side (Trio thread): POP_MESSAGE, ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME and CONSUMER_SEND_MSG_BACK to the broker a receipt handle names,
as RocketMQ 5's Proxy calls them (ConsumerProcessor, MQClientAPIExt.processPopResponse)."""

from __future__ import annotations

import logging

import attrs

from client.pop import popped_messages
from client.route import master_addr
from proxy.apis import definition_pb2 as pb
from proxy.cluster import ClusterClient
from proxy.consume import ReceiptHandle
from proxy.errors import ProxyError
from remoting import message as codec
from remoting.body import TopicRouteData
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from remoting.headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    PopMessageRequestHeader,
)
from remoting.serde import encode_header_fields

log = logging.getLogger(__name__)

INIT_MODE_MAX = 1  # ConsumeInitMode.MAX: a new group starts at the end, as the Proxy asks


@attrs.frozen
class PopRequest:
    topic: str
    group: str
    broker_name: str  # the queue the SDK asked for; "" for any
    batch: int
    invisible_ms: int
    polling_ms: int
    fifo: bool
    max_attempts: int  # a message popped this often before goes to %DLQ% instead
    exp_type: str
    exp: str
    attempt_id: str | None


@attrs.frozen
class Popped:
    code: int  # a Code: OK, MESSAGE_NOT_FOUND, TOO_MANY_REQUESTS, ...
    message: str
    messages: list[tuple[codec.MessageExt, ReceiptHandle]] = attrs.Factory(list)


def _readable_masters(route: TopicRouteData) -> list[str]:
    masters = {d.broker_name for d in route.broker_datas if 0 in {int(k) for k in d.broker_addrs}}
    return [
        q.broker_name
        for q in sorted(route.queue_datas, key=lambda q: q.broker_name)
        if q.broker_name in masters and q.perm & 4 and q.read_queue_nums > 0
    ]


class PopClient:
    def __init__(self, cluster: ClusterClient) -> None:
        self.cluster = cluster
        self.instance = cluster.instance

    async def _broker_addr(self, topic: str, broker_name: str) -> str:
        route = await self.cluster.route(topic)
        addr = master_addr(route, broker_name)
        if addr is None:
            raise ProxyError(pb.Code.BAD_REQUEST, f"broker {broker_name} is not serving {topic}")
        return addr

    async def pop(self, request: PopRequest, timeout_s: float) -> Popped:
        route = await self.cluster.route(request.topic)
        brokers = _readable_masters(route)
        if not brokers:
            raise ProxyError(pb.Code.FORBIDDEN, "no readable queue")
        broker = request.broker_name if request.broker_name in brokers else brokers[0]
        header = PopMessageRequestHeader(
            consumer_group=request.group,
            topic=request.topic,
            queue_id=-1,
            max_msg_nums=request.batch,
            invisible_time=request.invisible_ms,
            poll_time=request.polling_ms,
            born_time=0,
            init_mode=INIT_MODE_MAX,
            exp_type=request.exp_type,
            exp=request.exp,
            order=request.fifo,
            attempt_id=request.attempt_id,
        )
        command = self.instance.request(RequestCode.POP_MESSAGE, encode_header_fields(header))
        addr = await self._broker_addr(request.topic, broker)
        response = await self.instance.invoke(addr, command, timeout_s)
        if response.code == ResponseCode.SUCCESS:
            found = [
                (msg, ReceiptHandle(extra, msg.commit_log_offset))
                for msg, extra in popped_messages(response, broker)
            ]
            found = await self._dead_lettered(request, found)
            if found:
                return Popped(pb.Code.OK, "OK", found)
            return Popped(pb.Code.MESSAGE_NOT_FOUND, "no match message")
        if response.code == ResponseCode.POLLING_FULL:
            return Popped(pb.Code.TOO_MANY_REQUESTS, "polling full")
        if response.code in (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
            return Popped(pb.Code.MESSAGE_NOT_FOUND, "no new message")
        if response.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
            return Popped(pb.Code.CONSUMER_GROUP_NOT_FOUND, response.remark or "")
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return Popped(pb.Code.TOPIC_NOT_FOUND, response.remark or "")
        return Popped(pb.Code.INTERNAL_SERVER_ERROR, response.remark or f"pop: {response.code}")

    async def _dead_lettered(
        self, request: PopRequest, found: list[tuple[codec.MessageExt, ReceiptHandle]]
    ) -> list[tuple[codec.MessageExt, ReceiptHandle]]:
        """What is left to deliver once the messages consumed ``max_attempts`` times went to
        the group's %DLQ% (PopMessageResultFilterImpl's TO_DLQ): an orderly queue would
        otherwise hand the same message back for ever. A forward that fails leaves the
        message in flight; it comes back after its invisible time and is forwarded again."""
        deliver = []
        for msg, handle in found:
            if msg.reconsume_times < request.max_attempts:
                deliver.append((msg, handle))
                continue
            try:
                await self.forward_to_dlq(request.group, request.topic, handle, msg.msg_id)
            except (ProxyError, RemotingError, OSError) as exc:
                log.info("%s of %s to its DLQ: %r", msg.msg_id, request.group, exc)
        return deliver

    async def ack(self, group: str, topic: str, handle: ReceiptHandle) -> int:
        extra = handle.extra
        assert extra.queue_offset is not None
        header = AckMessageRequestHeader(
            consumer_group=group,
            topic=handle.real_topic(topic, group),
            queue_id=extra.queue_id,
            extra_info=handle.extra_info,
            offset=extra.queue_offset,
        )
        addr = await self._broker_addr(topic, extra.broker_name)
        command = self.instance.request(RequestCode.ACK_MESSAGE, encode_header_fields(header))
        response = await self.instance.invoke(addr, command)
        if response.code == ResponseCode.SUCCESS:
            return pb.Code.OK
        log.info("ack of %s/%s refused: %s %s", group, topic, response.code, response.remark)
        return pb.Code.INTERNAL_SERVER_ERROR

    async def change_invisible(
        self, group: str, topic: str, handle: ReceiptHandle, invisible_ms: int
    ) -> ReceiptHandle:
        extra = handle.extra
        assert extra.queue_offset is not None
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=group,
            topic=handle.real_topic(topic, group),
            queue_id=extra.queue_id,
            extra_info=handle.extra_info,
            offset=extra.queue_offset,
            invisible_time=invisible_ms,
        )
        addr = await self._broker_addr(topic, extra.broker_name)
        command = self.instance.request(
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME, encode_header_fields(header)
        )
        response = await self.instance.invoke(addr, command)
        if response.code != ResponseCode.SUCCESS:
            raise ProxyError(
                pb.Code.INTERNAL_SERVER_ERROR, f"change invisible time failed: {response.remark}"
            )
        return handle.renewed(
            int(response.ext("popTime")),
            int(response.ext("invisibleTime")),
            int(response.ext("reviveQid")),
        )

    async def forward_to_dlq(
        self, group: str, topic: str, handle: ReceiptHandle, message_id: str
    ) -> int:
        """CONSUMER_SEND_MSG_BACK with delayLevel -1 (straight to %DLQ%group), then the ack,
        as ProducerProcessor.forwardMessageToDeadLetterQueue."""
        header = ConsumerSendMsgBackRequestHeader(
            offset=handle.commit_log_offset,
            group=group,
            delay_level=-1,
            origin_msg_id=message_id,
            origin_topic=handle.real_topic(topic, group),
            max_reconsume_times=0,
        )
        addr = await self._broker_addr(topic, handle.extra.broker_name)
        command = self.instance.request(
            RequestCode.CONSUMER_SEND_MSG_BACK, encode_header_fields(header)
        )
        response = await self.instance.invoke(addr, command)
        if response.code != ResponseCode.SUCCESS:
            code = pb.Code.TOO_MANY_REQUESTS if response.code == ResponseCode.SYSTEM_BUSY else None
            raise ProxyError(
                code or pb.Code.INTERNAL_SERVER_ERROR, response.remark or "send back failed"
            )
        await self.ack(group, topic, handle)
        return pb.Code.OK
