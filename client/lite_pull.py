"""LitePullConsumer (lite pull, assign mode): the application owns the loop. ``assign`` queues,
``poll`` returns what arrived (long-polling each queue in the background), ``seek`` moves a
queue's position, ``commit`` stores the consumed positions at the broker."""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import trio

from acl.credentials import SessionCredentials
from client.instance import ClientConfig, MQClientInstance
from client.offset_store import RemoteBrokerOffsetStore
from client.puller import Puller, PullTarget
from client.route import subscribe_queues
from remoting.body import ConsumerData, ConsumeType, MessageQueue
from remoting.codes import ResponseCode
from remoting.errors import RemotingError
from remoting.message import MessageExt

log = logging.getLogger(__name__)

POLL_SUSPEND_MS = 5_000
ERROR_DELAY_S = 1.0


class LitePullConsumer:
    def __init__(self, instance: MQClientInstance, group: str, *, buffer: int = 10_000) -> None:
        self.instance = instance
        self.group = group
        self.puller = Puller(instance, group)
        self.offsets = RemoteBrokerOffsetStore(instance, group)
        self.positions: dict[MessageQueue, int] = {}  # next offset to hand to the application
        self._scopes: dict[MessageQueue, trio.CancelScope] = {}
        self._generation: dict[MessageQueue, int] = {}  # bumped by seek: stale buffers drop
        self._send, self._receive = trio.open_memory_channel[tuple](buffer)
        self._nursery: trio.Nursery | None = None
        self._topics: set[str] = set()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        namesrv_addr: str,
        group: str,
        *,
        credentials: SessionCredentials | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> AsyncIterator[LitePullConsumer]:
        config = ClientConfig(namesrv_addr, credentials=credentials, ssl_context=ssl_context)
        async with (
            MQClientInstance.open(config) as instance,
            trio.open_nursery() as nursery,
        ):
            consumer = cls(instance, group)
            consumer._nursery = nursery
            instance.members.append(consumer)
            try:
                yield consumer
            finally:
                await consumer.commit()
                await instance.unregister(None, group)
                nursery.cancel_scope.cancel()

    def heartbeat_data(self) -> ConsumerData:
        return ConsumerData(group_name=self.group, consume_type=ConsumeType.CONSUME_ACTIVELY)

    def topics(self) -> set[str]:
        return set(self._topics)

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        route = await self.instance.fetch_route(topic)
        return subscribe_queues(topic, route) if route is not None else []

    async def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues, each from the group's committed offset (0 if none)."""
        wanted = set(mqs)
        for mq in set(self._scopes) - wanted:
            self._scopes.pop(mq).cancel()
            self.positions.pop(mq, None)
        for mq in sorted(wanted - set(self._scopes)):
            self._topics.add(mq.topic)
            committed = await self.offsets.read_from_store(mq)
            self._start(mq, max(committed, 0))

    def _start(self, mq: MessageQueue, offset: int) -> None:
        assert self._nursery is not None, "use LitePullConsumer.open()"
        scope = trio.CancelScope()
        self._scopes[mq] = scope
        self.positions[mq] = offset
        generation = self._generation[mq] = self._generation.get(mq, 0) + 1
        self._nursery.start_soon(self._pull, mq, offset, scope, generation)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """The next ``poll`` of ``mq`` starts at ``offset`` (messages already buffered from the
        old position are dropped)."""
        scope = self._scopes.pop(mq, None)
        if scope is not None:
            scope.cancel()
        self._start(mq, offset)

    async def _pull(
        self, mq: MessageQueue, offset: int, scope: trio.CancelScope, generation: int
    ) -> None:
        from remoting.body import SubscriptionData

        target = PullTarget(mq, SubscriptionData(topic=mq.topic), commit=False)
        with scope:
            while True:
                try:
                    code, msgs, next_offset = await self.puller.pull_once(
                        target, offset, suspend_ms=POLL_SUSPEND_MS
                    )
                except (RemotingError, OSError) as exc:
                    log.info("pull %s failed: %s", mq, exc)
                    await trio.sleep(ERROR_DELAY_S)
                    continue
                if code not in (
                    ResponseCode.SUCCESS,
                    ResponseCode.PULL_NOT_FOUND,
                    ResponseCode.PULL_RETRY_IMMEDIATELY,
                    ResponseCode.PULL_OFFSET_MOVED,
                ):
                    await trio.sleep(ERROR_DELAY_S)
                    continue
                for msg in msgs:
                    await self._send.send((mq, generation, msg))
                offset = next_offset

    async def poll(self, timeout_s: float = 5.0, max_messages: int = 32) -> list[MessageExt]:
        """Up to ``max_messages`` messages, waiting at most ``timeout_s`` for the first."""
        items: list[tuple] = []
        with trio.move_on_after(timeout_s):
            items.append(await self._receive.receive())
        while items and len(items) < max_messages:
            try:
                items.append(self._receive.receive_nowait())
            except trio.WouldBlock:
                break
        fresh = []
        for mq, generation, msg in items:
            if self._generation.get(mq) == generation and mq in self._scopes:
                self.positions[mq] = msg.queue_offset + 1
                fresh.append(msg)
        return fresh

    async def commit(self) -> None:
        """Store every assigned queue's position (what ``poll`` handed out) at the broker."""
        for mq, offset in self.positions.items():
            self.offsets.update(mq, offset, increase_only=False)
        await self.offsets.persist(set(self.positions))
