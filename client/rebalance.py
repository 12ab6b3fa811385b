"""RebalanceImpl: which queues of each subscribed topic this consumer owns, and starting and
stopping their pullers as that changes (every 20 s and whenever a broker says the group changed).
Clustering splits the queues with the allocation strategy over the group's members (both lists
sorted, so every member computes the same split); broadcasting takes them all. Orderly consumers
lock their queues at the broker first. Mixed into PushConsumer, whose state it uses."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from client.errors import MQClientError
from client.process_queue import ProcessQueue
from client.route import broker_addr, master_addr, subscribe_queues
from remoting import constants as K
from remoting.body import (
    ConsumeFromWhere,
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    MessageQueue,
)
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from remoting.serde import decode_body, encode_body

if TYPE_CHECKING:
    from typing import Any

log = logging.getLogger("client.consumer")

REBALANCE_INTERVAL_S = 20.0
UNLOCK_WAIT_S = 1.0
RELOCK_REBALANCE_S = 0.5


class RebalanceImpl:
    # Provided by PushConsumer.
    instance: Any
    group: str
    model: MessageModel
    orderly: bool
    queues: dict[MessageQueue, ProcessQueue]
    subscriptions: dict[str, Any]

    async def _rebalance_loop(self) -> None:
        while True:
            with trio.move_on_after(REBALANCE_INTERVAL_S):
                await self._rebalance_now.wait()
            self._rebalance_now = trio.Event()
            await self.rebalance()

    async def _rebalance_later(self, delay_s: float) -> None:
        await trio.sleep(delay_s)
        self._rebalance_now.set()

    async def _member_ids(self, topic: str) -> list[str]:
        route = await self.instance.route(topic)
        if route is None:
            return []
        for data in sorted(route.broker_datas, key=lambda d: d.broker_name):
            found = broker_addr(route, data.broker_name)
            if found is None:
                continue
            request = self.instance.request(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": self.group}
            )
            try:
                response = await self.instance.invoke(found[0], request)
            except (RemotingError, OSError):
                continue
            if response.code == ResponseCode.SUCCESS:
                return sorted(
                    decode_body(GetConsumerListByGroupResponseBody, response.body).consumer_id_list
                )
        return []

    async def rebalance(self) -> None:
        # One at a time: a notification arriving mid-rebalance must not start a second puller.
        async with self._rebalance_lock:
            await self._rebalance()

    async def _rebalance(self) -> None:
        for topic in list(self.subscriptions):
            try:
                route = await self.instance.fetch_route(topic)
            except MQClientError as exc:
                log.info("rebalance of %s: %s", topic, exc)
                continue
            if route is None:
                continue
            mqs = subscribe_queues(topic, route)
            if self.model is MessageModel.BROADCASTING:
                mine = set(mqs)
            else:
                cids = await self._member_ids(topic)
                if not cids:
                    continue
                mine = set(self.allocate(self.instance.client_id, mqs, cids))
            await self._update_queues(topic, mine)

    async def _update_queues(self, topic: str, mine: set[MessageQueue]) -> None:
        current = {mq for mq in self.queues if mq.topic == topic}
        gone = current - mine
        leaving = {mq: self.queues.pop(mq) for mq in gone}
        for pq in leaving.values():
            pq.drop(finish_current=self.orderly)
        if gone:
            if self.orderly:
                unlock = {mq for mq, pq in leaving.items() if await _finished(pq)}
            await self.offsets.persist(gone)
            for mq in gone:
                self.offsets.remove(mq)
            if self.orderly:
                await self._unlock(unlock)
        added = sorted(mine - current)
        if self.orderly:
            wanted = set(added)
            added = sorted(await self._lock(wanted))
            if len(added) < len(wanted):
                # Another consumer still holds some (finishing its message in hand, or dead
                # and its lock not yet lapsed): try again soon, as Java's rebalanceLater(500).
                assert self._nursery is not None
                self._nursery.start_soon(self._rebalance_later, RELOCK_REBALANCE_S)
        for mq in added:
            try:
                offset = await self._start_offset(mq)
            except (RemotingError, OSError, MQClientError) as exc:
                log.warning("cannot start %s: %s", mq, exc)
                continue
            pq = ProcessQueue()
            pq.relocked(self.orderly)
            self.queues[mq] = pq
            assert self._nursery is not None
            self._nursery.start_soon(self._pull_queue, mq, pq, offset)
            if self.orderly:
                self._nursery.start_soon(self._consume_orderly, mq, pq)
        if gone or added:
            log.info("rebalance %s: -%d +%d -> %d queues", topic, len(gone), len(added), len(mine))

    async def _start_offset(self, mq: MessageQueue) -> int:
        stored = await self.offsets.read_from_store(mq)
        if stored >= 0:
            return stored
        retry = mq.topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX)
        where = self.from_where
        if where in (
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            ConsumeFromWhere.CONSUME_FROM_MIN_OFFSET,
        ) or (retry and where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET):
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP and not retry:
            return await self.puller.search_offset(mq, self.consume_timestamp_ms or 0)
        return await self.puller.max_offset(mq)

    async def _lock(self, mqs: set[MessageQueue]) -> set[MessageQueue]:
        return await self._lock_call(RequestCode.LOCK_BATCH_MQ, mqs)

    async def _unlock(self, mqs: set[MessageQueue]) -> None:
        await self._lock_call(RequestCode.UNLOCK_BATCH_MQ, mqs)

    async def _lock_call(self, code: int, mqs: set[MessageQueue]) -> set[MessageQueue]:
        locked: set[MessageQueue] = set()
        by_broker: dict[tuple[str, str], set[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault((mq.topic, mq.broker_name), set()).add(mq)
        for (topic, broker), group in by_broker.items():
            route = await self.instance.route(topic)
            addr = master_addr(route, broker) if route is not None else None
            if addr is None:
                continue
            body = encode_body(
                LockBatchRequestBody(
                    consumer_group=self.group,
                    client_id=self.instance.client_id,
                    mq_set=sorted(group),
                )
            )
            try:
                response = await self.instance.invoke(addr, self.instance.request(code, body=body))
            except (RemotingError, OSError):
                continue
            if code == RequestCode.LOCK_BATCH_MQ and response.code == ResponseCode.SUCCESS:
                locked |= set(decode_body(LockBatchResponseBody, response.body).lock_ok_mq_set)
        return locked


async def _finished(pq: ProcessQueue) -> bool:
    """Whether the orderly consumer of a leaving queue finished its message in hand within
    a second; if not, the queue stays locked at the broker until its lock expires, so no other
    consumer starts on it meanwhile (Java waits on the consume lock the same way)."""
    with trio.move_on_after(UNLOCK_WAIT_S):
        async with pq.consume_lock:
            return True
    return False
