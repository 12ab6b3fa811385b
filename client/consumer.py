"""PushConsumer (DefaultMQPushConsumer): subscribe, rebalance, long-polling pulls per queue,
concurrent or orderly consumption, retries through the broker, offsets committed every 5 s.

Clustering splits the queues of each subscribed topic among the group's members with the
chosen allocation strategy (averagely by default) and re-splits every 20 s and whenever a broker
says the group changed; broadcasting gives every member every queue and keeps offsets locally.
"""

from __future__ import annotations

import enum
import inspect
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import attrs
import trio

from acl.credentials import SessionCredentials
from client import consumer_inspect
from client.allocate import Strategy, averagely
from client.errors import MQClientError
from client.instance import ClientConfig, MQClientInstance
from client.message import restore_retry_topic
from client.offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from client.process_queue import ProcessQueue
from client.puller import Puller, PullTarget
from client.rebalance import RebalanceImpl
from client.route import all_broker_addrs
from remoting import constants as K
from remoting.body import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    MessageQueue,
    ResetOffsetBody,
    SubscriptionData,
)
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from remoting.java_hash import java_string_hash
from remoting.message import MessageExt
from remoting.serde import decode_body, encode_body

log = logging.getLogger(__name__)

LOCAL_RETRY_DELAY_S = 5.0
ORDERLY_SUSPEND_S = 1.0
ORDERLY_RELOCK_S = 0.1  # Java retries a lock it lacks after 100 ms


class ConsumeStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    # orderly listeners
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


OK = {ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.SUCCESS}
Listener = Callable[[list[MessageExt]], ConsumeStatus | Awaitable[ConsumeStatus]]


@attrs.frozen
class MessageSelector:
    """Java's MessageSelector: a tag expression (``TagA || TagB``) or, where the broker has
    ``enablePropertyFilter=true``, a SQL92 expression over message properties."""

    expression: str
    type: str = "TAG"

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        return cls(sql, "SQL92")

    @classmethod
    def by_tag(cls, tags: str) -> MessageSelector:
        return cls(tags)


def subscription(topic: str, expression: str | MessageSelector) -> SubscriptionData:
    if isinstance(expression, MessageSelector):
        if expression.type != "TAG":
            return SubscriptionData(
                topic=topic,
                sub_string=expression.expression,
                expression_type=expression.type,
                sub_version=int(time.time() * 1000),
            )
        expression = expression.expression
    expression = (expression or "*").strip() or "*"
    tags = set() if expression == "*" else {t.strip() for t in expression.split("||") if t.strip()}
    return SubscriptionData(
        topic=topic,
        sub_string=expression,
        tags_set=tags,
        code_set={java_string_hash(t) for t in tags},
        sub_version=int(time.time() * 1000),
    )


class PushConsumer(RebalanceImpl):
    def __init__(
        self,
        instance: MQClientInstance,
        group: str,
        listener: Listener,
        *,
        orderly: bool = False,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        allocate: Strategy = averagely,
        consume_thread_max: int = 20,
        pull_batch_size: int = 32,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100 * 1024 * 1024,
        max_reconsume_times: int = 16,
        offset_dir: Path | None = None,
    ) -> None:
        self.instance = instance
        self.group = group
        self.listener = listener
        self.orderly = orderly
        self.model = message_model
        self.from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.allocate = allocate
        self.threads = consume_thread_max
        self.max_reconsume_times = max_reconsume_times
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.queues: dict[MessageQueue, ProcessQueue] = {}
        self.puller = Puller(
            instance,
            group,
            batch=pull_batch_size,
            max_count=pull_threshold_for_queue,
            max_bytes=pull_threshold_size_for_queue,
        )
        if message_model is MessageModel.BROADCASTING:
            base = offset_dir or Path.home() / ".rocketmq_offsets"
            self.offsets: OffsetStore = LocalFileOffsetStore(
                base / instance.client_id / group / "offsets.json"
            )
        else:
            self.offsets = RemoteBrokerOffsetStore(instance, group)
        self._rebalance_now = trio.Event()
        self._rebalance_lock = trio.Lock()
        self._work_send, self._work_receive = trio.open_memory_channel[tuple](10_000)
        self._nursery: trio.Nursery | None = None
        self.started_ms = 0

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        namesrv_addr: str,
        group: str,
        listener: Listener,
        subscriptions: dict[str, str | MessageSelector],
        *,
        instance_name: str | None = None,
        credentials: SessionCredentials | None = None,
        ssl_context: ssl.SSLContext | None = None,
        **kwargs: object,
    ) -> AsyncIterator[PushConsumer]:
        config = ClientConfig(namesrv_addr, credentials=credentials, ssl_context=ssl_context)
        if instance_name:
            config = attrs.evolve(config, instance_name=instance_name)
        async with MQClientInstance.open(config) as instance:
            consumer = cls(instance, group, listener, **kwargs)  # type: ignore[arg-type]
            for topic, expression in subscriptions.items():
                consumer.subscribe(topic, expression)
            async with trio.open_nursery() as nursery:
                await consumer.start(nursery)
                try:
                    yield consumer
                finally:
                    await consumer.shutdown()
                    nursery.cancel_scope.cancel()

    # ------------------------------------------------------------------ Member

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        self.subscriptions[topic] = subscription(topic, expression)

    def heartbeat_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=self.model,
            consume_from_where=self.from_where,
            subscription_data_set=list(self.subscriptions.values()),
        )

    def topics(self) -> set[str]:
        return set(self.subscriptions)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, nursery: trio.Nursery) -> None:
        self.started_ms = time.time_ns() // 1_000_000
        if not self.subscriptions:
            raise MQClientError("subscribe to at least one topic before starting")
        if self.model is MessageModel.CLUSTERING:
            retry = K.retry_topic(self.group)
            self.subscriptions.setdefault(retry, subscription(retry, "*"))
        self._nursery = nursery
        instance = self.instance
        instance.members.append(self)
        instance.register_server_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._notified)
        instance.register_server_request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._reset_offset
        )
        instance.register_server_request(
            RequestCode.GET_CONSUMER_RUNNING_INFO, partial(consumer_inspect.running_info, self)
        )
        instance.register_server_request(
            RequestCode.CONSUME_MESSAGE_DIRECTLY, partial(consumer_inspect.consume_directly, self)
        )
        for topic in self.subscriptions:
            try:
                await instance.fetch_route(topic)
            except MQClientError as exc:
                log.warning("no route for %s yet: %s", topic, exc)
        await self._check_in_broker()
        await instance.send_heartbeat()
        for _ in range(1 if self.orderly else self.threads):
            nursery.start_soon(self._consume_worker)
        nursery.start_soon(self._rebalance_loop)
        nursery.start_soon(self._persist_loop)
        await self.rebalance()

    async def _check_in_broker(self) -> None:
        """Java's checkClientInBroker: a SQL92 subscription is shown to a broker of its topic
        at start, so an expression the brokers refuse fails the start, not every pull."""
        for sub in self.subscriptions.values():
            route = self.instance.routes.get(sub.topic)
            if sub.expression_type == "TAG" or route is None or not all_broker_addrs(route):
                continue
            addr = min(all_broker_addrs(route))
            body = CheckClientRequestBody(
                client_id=self.instance.client_id, group=self.group, subscription_data=sub
            )
            request = self.instance.request(
                RequestCode.CHECK_CLIENT_CONFIG, None, encode_body(body)
            )
            response = await self.instance.invoke(addr, request)
            if response.code != ResponseCode.SUCCESS:
                raise MQClientError(
                    f"broker {addr} refuses the {sub.expression_type} subscription "
                    f"{sub.sub_string!r} to {sub.topic}: {response.remark}"
                )

    async def shutdown(self) -> None:
        with trio.CancelScope(shield=True):
            for pq in self.queues.values():
                pq.drop()
            await self.offsets.persist(set(self.queues))
            if self.orderly:
                await self._unlock(set(self.queues))
            await self.instance.unregister(None, self.group)

    # ------------------------------------------------------------------ broker requests

    def _notified(self, connection: object, request: object) -> None:
        self._rebalance_now.set()

    async def _reset_offset(self, connection: object, request) -> None:
        body = decode_body(ResetOffsetBody, request.body)
        topic = request.ext("topic")
        for mq, offset in body.offset_table.items():
            pq = self.queues.pop(mq, None)
            if pq is not None:
                pq.drop()
            self.offsets.update(mq, offset, increase_only=False)
        await self.offsets.persist(set(body.offset_table))
        log.info("offsets of %s reset by the broker for %d queues", topic, len(body.offset_table))
        self._rebalance_now.set()

    # ------------------------------------------------------------------ rebalance

    # ------------------------------------------------------------------ pulling

    async def _pull_queue(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        sub = self.subscriptions[mq.topic]
        target = PullTarget(mq, sub, commit=self.model is MessageModel.CLUSTERING)
        with pq.cancel_scope:
            async for msgs in self.puller.follow(target, pq, offset, self.offsets):
                for msg in msgs:
                    restore_retry_topic(msg, self.group)
                pq.put(msgs)
                if not self.orderly:
                    for msg in msgs:
                        await self._work_send.send((mq, pq, msg))

    # ------------------------------------------------------------------ consuming

    async def _call_listener(self, msgs: list[MessageExt]) -> ConsumeStatus:
        try:
            status = self.listener(msgs)
            if inspect.isawaitable(status):
                status = await status
        except Exception:
            log.exception("listener raised: treated as RECONSUME_LATER")
            return ConsumeStatus.RECONSUME_LATER
        return status if isinstance(status, ConsumeStatus) else ConsumeStatus.RECONSUME_LATER

    async def _consume_worker(self) -> None:
        async for mq, pq, msg in self._work_receive:
            if pq.dropped:
                continue
            status = await self._call_listener([msg])
            if (
                status not in OK
                and self.model is MessageModel.CLUSTERING
                and not await self.send_back(msg, 0)
            ):
                # Kept in the process queue (the offset stays below it) and tried here again.
                self._later(mq, pq, msg)
                continue
            offset = pq.remove([msg])
            if offset >= 0 and not pq.dropped:
                self.offsets.update(mq, offset)

    def _later(self, mq: MessageQueue, pq: ProcessQueue, msg: MessageExt) -> None:
        async def resubmit() -> None:
            await trio.sleep(LOCAL_RETRY_DELAY_S)
            msg.reconsume_times += 1
            await self._work_send.send((mq, pq, msg))

        assert self._nursery is not None
        self._nursery.start_soon(resubmit)

    async def send_back(self, msg: MessageExt, delay_level: int) -> bool:
        """CONSUMER_SEND_MSG_BACK to the broker that stored ``msg``: the broker re-delivers it
        through %RETRY%group after a delay (and to %DLQ%group past max reconsume times)."""
        fields = {
            "offset": str(msg.commit_log_offset),
            "group": self.group,
            "delayLevel": str(delay_level),
            "originMsgId": msg.msg_id,
            "originTopic": msg.topic,
            "unitMode": "false",
            "maxReconsumeTimes": str(self.max_reconsume_times),
        }
        try:
            response = await self.instance.invoke(
                msg.store_host, self.instance.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields)
            )
        except (RemotingError, OSError) as exc:
            log.info("send back of %s failed: %s", msg.msg_id, exc)
            return False
        return response.code == ResponseCode.SUCCESS

    async def _consume_orderly(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """One task per queue: messages in offset order, one at a time; a suspended message is
        retried here until it succeeds or uses up its reconsume times (then it is sent back,
        which the broker turns into a dead letter)."""
        attempts = 0
        with pq.consume_scope:
            while not pq.dropped:
                batch = pq.first(1)
                if not batch:
                    await pq.arrived.wait()
                    continue
                if not pq.lock_valid():
                    # Never without the broker's lock (Java's tryLockLaterAndReconsume)
                    pq.relocked(mq in await self._lock({mq}))
                    if not pq.lock_valid():
                        await trio.sleep(ORDERLY_RELOCK_S)
                    continue
                async with pq.consume_lock:
                    if pq.dropped:
                        return
                    status = await self._call_listener(batch)
                    if status not in OK:
                        attempts += 1
                        if attempts <= self.max_reconsume_times:
                            await trio.sleep(ORDERLY_SUSPEND_S)
                            continue
                        batch[0].reconsume_times = self.max_reconsume_times
                        if not await self.send_back(batch[0], 3 + self.max_reconsume_times):
                            await trio.sleep(ORDERLY_SUSPEND_S)
                            continue
                    attempts = 0
                    offset = pq.remove(batch)
                    if offset >= 0:
                        self.offsets.update(mq, offset)

    async def _persist_loop(self) -> None:
        interval = self.instance.config.persist_consumer_offset_interval / 1000
        while True:
            await trio.sleep(interval)
            await self.offsets.persist(set(self.queues))
            if self.orderly and self.queues:
                locked = await self._lock(set(self.queues))
                for mq, pq in self.queues.items():
                    pq.relocked(mq in locked)
