"""Puller: long-polling PULL_MESSAGE for one queue at a time, following nextBeginOffset, the
broker's suggested broker id (master or slave), offset corrections and flow control."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import attrs
import trio

from client.errors import MQClientError
from client.process_queue import ProcessQueue
from client.route import MASTER_ID, broker_addr
from remoting import message as codec
from remoting.body import MessageQueue, SubscriptionData
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from remoting.message import MessageExt

if TYPE_CHECKING:
    from client.instance import MQClientInstance
    from client.offset_store import OffsetStore

log = logging.getLogger(__name__)

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
SUSPEND_MS = 15_000
PULL_TIMEOUT_S = 30.0
FLOW_CONTROL_DELAY_S = 0.05
ERROR_DELAY_S = 3.0


@attrs.frozen
class PullTarget:
    mq: MessageQueue
    subscription: SubscriptionData
    commit: bool = True  # clustering: piggy-back the committed offset on pulls to the master


def matches(sub: SubscriptionData, msg: MessageExt) -> bool:
    """Client-side tag check (the broker filtered by hash code; collisions end here)."""
    return not sub.tags_set or (msg.tags or "") in sub.tags_set


class Puller:
    def __init__(
        self,
        instance: MQClientInstance,
        group: str,
        *,
        batch: int = 32,
        max_count: int = 1000,
        max_bytes: int = 100 * 1024 * 1024,
    ) -> None:
        self.instance = instance
        self.group = group
        self.batch = batch
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.suggested: dict[MessageQueue, int] = {}

    async def _addr(self, mq: MessageQueue, broker_id: int) -> tuple[str, int]:
        route = await self.instance.route(mq.topic)
        found = broker_addr(route, mq.broker_name, broker_id) if route is not None else None
        if found is None:
            route = await self.instance.fetch_route(mq.topic)
            found = broker_addr(route, mq.broker_name, broker_id) if route is not None else None
        if found is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return found

    async def _offset_call(self, code: int, mq: MessageQueue, extra: dict[str, str]) -> int:
        addr, _ = await self._addr(mq, MASTER_ID)
        fields = {"topic": mq.topic, "queueId": str(mq.queue_id), **extra}
        response = await self.instance.invoke(addr, self.instance.request(code, fields))
        if response.code != ResponseCode.SUCCESS:
            raise MQClientError(f"{code} on {mq}: {response.code} {response.remark}")
        return int(response.ext("offset"))

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self._offset_call(RequestCode.GET_MAX_OFFSET, mq, {})

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self._offset_call(RequestCode.GET_MIN_OFFSET, mq, {})

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self._offset_call(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, mq, {"timestamp": str(timestamp_ms)}
        )

    async def pull_once(
        self,
        target: PullTarget,
        offset: int,
        *,
        commit_offset: int = -1,
        suspend_ms: int = SUSPEND_MS,
    ):
        """One PULL_MESSAGE: (code, messages matching the subscription, next offset)."""
        mq, sub = target.mq, target.subscription
        addr, broker_id = await self._addr(mq, self.suggested.get(mq, MASTER_ID))
        sys_flag = FLAG_SUBSCRIPTION | (FLAG_SUSPEND if suspend_ms else 0)
        if target.commit and commit_offset > 0 and broker_id == MASTER_ID:
            sys_flag |= FLAG_COMMIT_OFFSET
        fields = {
            "consumerGroup": self.group,
            "topic": mq.topic,
            "queueId": str(mq.queue_id),
            "queueOffset": str(offset),
            "maxMsgNums": str(self.batch),
            "sysFlag": str(sys_flag),
            "commitOffset": str(max(commit_offset, 0)),
            "suspendTimeoutMillis": str(suspend_ms),
            "subscription": sub.sub_string,
            "subVersion": str(sub.sub_version),
            "expressionType": sub.expression_type,
        }
        response = await self.instance.invoke(
            addr,
            self.instance.request(RequestCode.PULL_MESSAGE, fields),
            PULL_TIMEOUT_S if suspend_ms else None,
        )
        suggest = response.ext("suggestWhichBrokerId")
        if suggest is not None:
            self.suggested[mq] = int(suggest)
        next_offset = int(response.ext("nextBeginOffset") or offset)
        msgs: list[MessageExt] = []
        if response.code == ResponseCode.SUCCESS:
            msgs = [m for m in codec.decode_messages(response.body) if matches(sub, m)]
        return response.code, msgs, next_offset

    async def follow(
        self, target: PullTarget, pq: ProcessQueue, offset: int, offsets: OffsetStore
    ) -> AsyncIterator[list[MessageExt]]:
        """Pull ``target`` forever from ``offset``; yields each non-empty batch."""
        mq = target.mq
        while not pq.dropped:
            if pq.count >= self.max_count or pq.size_bytes >= self.max_bytes:
                with trio.move_on_after(FLOW_CONTROL_DELAY_S * 20):
                    await pq.consumed.wait()
                continue
            try:
                code, msgs, next_offset = await self.pull_once(
                    target, offset, commit_offset=offsets.table.get(mq, -1)
                )
            except (RemotingError, OSError, MQClientError) as exc:
                log.info("pull %s failed: %s", mq, exc)
                await trio.sleep(ERROR_DELAY_S)
                continue
            if code == ResponseCode.PULL_OFFSET_MOVED:
                log.warning("offset of %s moved: %d -> %d", mq, offset, next_offset)
                offsets.update(mq, next_offset, increase_only=False)
                await offsets.persist({mq})
            elif code not in (
                ResponseCode.SUCCESS,
                ResponseCode.PULL_NOT_FOUND,
                ResponseCode.PULL_RETRY_IMMEDIATELY,
            ):
                log.warning("pull %s answered %d", mq, code)
                await trio.sleep(ERROR_DELAY_S)
                continue
            if code == ResponseCode.SUCCESS and not msgs and next_offset > offset:
                # Everything was filtered out: nothing to consume, but the offset moves on.
                if not pq.msgs:
                    offsets.update(mq, next_offset)
                pq.max_offset_seen = max(pq.max_offset_seen, next_offset - 1)
            offset = next_offset
            if msgs:
                yield msgs
