"""Producer (DefaultMQProducer): sync, async, oneway, batch and ordered sends.

Queue choice is round-robin over the topic's writable queues; a failed sync send is retried
``retry_times_when_send_failed`` times on another broker when there is one. A topic the
NameServer does not know is sent through TBW102's brokers, which create it (autoCreateTopicEnable).
Bodies above ``compress_over`` bytes are zlib-compressed with the COMPRESSED sysflag.
"""

from __future__ import annotations

import logging
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from acl.credentials import SessionCredentials
from client.errors import MQBrokerError, MQClientError
from client.fault import LatencyFaultTolerance
from client.instance import ClientConfig, MQClientInstance
from client.message import Message, SendResult, SendStatus
from client.msgid import create_uniq_id
from client.request_reply import ReplyWaiters, is_reply
from client.route import TopicPublishInfo, default_topic_publish_info, master_addr, publish_info
from remoting import constants as K
from remoting import message as codec
from remoting import names
from remoting.body import MessageQueue, ProducerData
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from remoting.headers import SendMessageRequestHeaderV2
from remoting.java_hash import java_string_hash
from remoting.message import MessageExt
from remoting.serde import encode_header_fields

log = logging.getLogger(__name__)

COMPRESSED_FLAG = 0x1
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
RETRY_CODES = {
    ResponseCode.TOPIC_NOT_EXIST,
    ResponseCode.SERVICE_NOT_AVAILABLE,
    ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION,
    ResponseCode.SYSTEM_BUSY,
}
STORE_STATUS = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}

Selector = Callable[[list[MessageQueue], Message, object], MessageQueue]


def select_by_hash(mqs: list[MessageQueue], msg: Message, arg: object) -> MessageQueue:
    """SelectMessageQueueByHash: abs(arg.hashCode()) % queues, Java's String.hashCode for str."""
    key = java_string_hash(arg) if isinstance(arg, str) else hash(arg)
    return mqs[abs(key) % len(mqs)]


class Producer:
    def __init__(
        self,
        instance: MQClientInstance,
        group: str,
        *,
        send_msg_timeout_ms: int = 3000,
        retry_times_when_send_failed: int = 2,
        compress_over: int = 4096,
        default_topic_queue_nums: int = 4,
        send_latency_fault_enable: bool = False,
    ) -> None:
        self.instance = instance
        self.group = group
        self.timeout_s = send_msg_timeout_ms / 1000
        self.retries = retry_times_when_send_failed
        self.compress_over = compress_over
        self.default_topic_queue_nums = default_topic_queue_nums
        self.fault = LatencyFaultTolerance() if send_latency_fault_enable else None
        self.publish: dict[str, TopicPublishInfo] = {}
        self._nursery: trio.Nursery | None = None
        self.replies = ReplyWaiters()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        namesrv_addr: str,
        group: str,
        *args: Any,
        client_config: ClientConfig | None = None,
        credentials: SessionCredentials | None = None,
        ssl_context: ssl.SSLContext | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """A started producer of ``cls`` (subclasses take their own extra arguments);
        ``client_config`` overrides the instance's intervals (its address wins over it);
        ``credentials`` sign every request (ACL); ``ssl_context``: TLS on every connection."""
        config = attrs.evolve(
            client_config or ClientConfig(namesrv_addr), namesrv_addr=namesrv_addr
        )
        if credentials is not None:
            config = attrs.evolve(config, credentials=credentials)
        if ssl_context is not None:
            config = attrs.evolve(config, ssl_context=ssl_context)
        async with (
            MQClientInstance.open(config) as instance,
            trio.open_nursery() as nursery,
        ):
            producer = cls(instance, group, *args, **kwargs)
            producer._nursery = nursery
            instance.register_server_request(
                RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, producer.replies.receive
            )
            instance.members.append(producer)
            instance.route_listeners.append(producer._on_route)
            # As Java's producer: learn TBW102's brokers now, so they hear our heartbeat (a
            # transaction check-back needs it) before we ever send.
            nursery.start_soon(instance.refresh_routes)
            try:
                yield producer
            finally:
                await instance.unregister(group, None)
                nursery.cancel_scope.cancel()

    # ------------------------------------------------------------------ Member

    def heartbeat_data(self) -> ProducerData:
        return ProducerData(group_name=self.group)

    def topics(self) -> set[str]:
        return {*self.publish, K.DEFAULT_TOPIC}

    # ------------------------------------------------------------------ routes

    async def publish_info(self, topic: str) -> TopicPublishInfo:
        info = self.publish.get(topic)
        if info is not None and info.queues:
            return info
        route = await self.instance.fetch_route(topic)
        if route is not None:
            info = publish_info(topic, route)
        else:
            default = await self.instance.route(K.DEFAULT_TOPIC)
            if default is None:
                raise MQClientError(
                    f"No route info of this topic: {topic} (and no {K.DEFAULT_TOPIC} route for "
                    "auto-creation)"
                )
            info = default_topic_publish_info(topic, default, self.default_topic_queue_nums)
        if not info.queues:
            raise MQClientError(f"No route info of this topic: {topic}: no writable queue")
        self.publish[topic] = info
        return info

    def _on_route(self, topic: str, route: object) -> None:
        self.publish.pop(topic, None)

    # ------------------------------------------------------------------ checks and requests

    @staticmethod
    def check(msg: Message) -> None:
        problem = names.topic_problem(msg.topic)
        if problem:
            raise MQClientError(f"invalid topic {msg.topic!r}: {problem}")
        if not msg.body:
            raise MQClientError("the message body is empty")
        if len(msg.body) > MAX_MESSAGE_SIZE:
            raise MQClientError(
                f"the message body is {len(msg.body)} bytes, max {MAX_MESSAGE_SIZE}"
            )

    def _single_request(
        self, msg: Message, mq: MessageQueue, uniq: str, *, oneway: bool = False, sys_flag: int = 0
    ):
        body = msg.body
        if len(body) > self.compress_over:
            body, sys_flag = zlib.compress(body, 5), sys_flag | COMPRESSED_FLAG
        props = msg.wire_properties()
        props[codec.MessageConst.UNIQ_KEY] = uniq
        code = RequestCode.SEND_REPLY_MESSAGE_V2 if is_reply(props) else RequestCode.SEND_MESSAGE_V2
        return self._request(code, mq, props, body, sys_flag, msg.flag, oneway=oneway)

    def _request(self, code, mq, props, body, sys_flag, flag, *, batch=False, oneway=False):
        header = SendMessageRequestHeaderV2(
            a=self.group,
            b=mq.topic,
            c=K.DEFAULT_TOPIC,
            d=self.default_topic_queue_nums,
            e=mq.queue_id,
            f=sys_flag,
            g=int(time.time() * 1000),
            h=flag,
            i=codec.properties_to_string(props) if props else "",
            j=0,
            k=False,
            m=batch,
        )
        return self.instance.request(code, encode_header_fields(header), body, oneway=oneway)

    async def _broker(self, mq: MessageQueue) -> str:
        route = await self.instance.route(mq.topic)
        addr = master_addr(route, mq.broker_name) if route is not None else None
        if addr is None:
            route = await self.instance.route(K.DEFAULT_TOPIC)
            addr = master_addr(route, mq.broker_name) if route is not None else None
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    def _result(self, response, mq: MessageQueue, uniq: str, addr: str) -> SendResult:
        status = STORE_STATUS.get(response.code)
        if status is None:
            raise MQBrokerError(response.code, response.remark, addr)
        return SendResult(
            status=status,
            msg_id=uniq,
            offset_msg_id=response.ext("msgId") or "",
            message_queue=MessageQueue(
                topic=mq.topic, broker_name=mq.broker_name, queue_id=int(response.ext("queueId"))
            ),
            queue_offset=int(response.ext("queueOffset")),
        )

    # ------------------------------------------------------------------ sends

    async def send(
        self, msg: Message, mq: MessageQueue | None = None, *, sys_flag: int = 0
    ) -> SendResult:
        """Sync send; retried on another broker when it fails (not when a queue is given)."""
        self.check(msg)
        uniq = create_uniq_id()
        attempts = 1 if mq is not None else 1 + self.retries
        last_broker: str | None = None
        last_error: Exception | None = None
        for _ in range(attempts):
            target = mq or await self._pick(msg.topic, last_broker)
            last_broker = target.broker_name
            started = time.monotonic()
            try:
                addr = await self._broker(target)
                response = await self.instance.invoke(
                    addr, self._single_request(msg, target, uniq, sys_flag=sys_flag), self.timeout_s
                )
            except (RemotingError, OSError, MQClientError) as exc:
                self._latency(target, started, isolation=True)
                last_error = exc
                self.publish.pop(msg.topic, None)
                continue
            self._latency(target, started)
            if response.code in RETRY_CODES:
                last_error = MQBrokerError(response.code, response.remark, addr)
                self.publish.pop(msg.topic, None)
                continue
            return self._result(response, target, uniq, addr)
        raise MQClientError(f"send to {msg.topic} failed after {attempts} attempts: {last_error}")

    async def request(self, msg: Message, timeout_s: float = 3.0) -> MessageExt:
        """Send ``msg`` as a request and return the answer a consumer sends back with
        ``create_reply_message`` (RequestTimeoutError when none comes within ``timeout_s``)."""
        return await self.replies.request(self, msg, timeout_s)

    async def _pick(self, topic: str, avoid: str | None) -> MessageQueue:
        info = await self.publish_info(topic)
        if self.fault is None:
            return info.select(avoid)
        for _ in range(len(info.queues)):
            mq = info.select(avoid)
            if self.fault.is_available(mq.broker_name):
                return mq
        return info.select(avoid)

    def _latency(self, mq: MessageQueue, started: float, *, isolation: bool = False) -> None:
        if self.fault is not None:
            elapsed = int((time.monotonic() - started) * 1000)
            self.fault.update(mq.broker_name, elapsed, isolation=isolation)

    async def send_oneway(self, msg: Message) -> None:
        self.check(msg)
        mq = await self._pick(msg.topic, None)
        addr = await self._broker(mq)
        request = self._single_request(msg, mq, create_uniq_id(), oneway=True)
        await self.instance.invoke_oneway(addr, request)

    def send_async(
        self,
        msg: Message,
        on_success: Callable[[SendResult], None],
        on_error: Callable[[Exception], None] = lambda exc: log.warning("async send: %s", exc),
    ) -> None:
        """Returns at once; one callback runs when the send completes."""
        assert self._nursery is not None, "use Producer.open()"

        async def run() -> None:
            try:
                result = await self.send(msg)
            except (MQClientError, RemotingError, OSError) as exc:
                on_error(exc)
                return
            on_success(result)

        self._nursery.start_soon(run)

    async def send_orderly(
        self, msg: Message, arg: object, selector: Selector = select_by_hash
    ) -> SendResult:
        """Messages with the same ``arg`` go to the same queue, in send order."""
        info = await self.publish_info(msg.topic)
        return await self.send(msg, selector(list(info.queues), msg, arg))

    async def send_batch(self, msgs: Sequence[Message]) -> SendResult:
        """One SEND_BATCH_MESSAGE: same topic, no delay; ``msg_id`` lists every UNIQ_KEY."""
        if not msgs:
            raise MQClientError("empty batch")
        topic = msgs[0].topic
        for msg in msgs:
            self.check(msg)
            if msg.topic != topic:
                raise MQClientError("the topic of the messages in one batch should be the same")
            if msg.delay_level > 0:
                raise MQClientError("TimeDelayLevel is not supported for batching")
        uniqs = [create_uniq_id() for _ in msgs]
        entries = []
        for msg, uniq in zip(msgs, uniqs, strict=True):
            props = msg.wire_properties()
            props[codec.MessageConst.UNIQ_KEY] = uniq
            entries.append((msg.flag, msg.body, codec.properties_to_string(props)))
        body = codec.encode_batch_body(entries)
        last_error: Exception | None = None
        last_broker = None
        for _ in range(1 + self.retries):
            mq = await self._pick(topic, last_broker)
            last_broker = mq.broker_name
            try:
                addr = await self._broker(mq)
                request = self._request(
                    RequestCode.SEND_BATCH_MESSAGE, mq, {"WAIT": "true"}, body, 0, 0, batch=True
                )
                response = await self.instance.invoke(addr, request, self.timeout_s)
            except (RemotingError, OSError, MQClientError) as exc:
                last_error = exc
                continue
            if response.code in RETRY_CODES:
                last_error = MQBrokerError(response.code, response.remark, addr)
                continue
            return self._result(response, mq, ",".join(uniqs), addr)
        raise MQClientError(f"batch send to {topic} failed: {last_error}")
