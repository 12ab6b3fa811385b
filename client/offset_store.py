"""Consumer offset stores: the broker's table for clustering (RemoteBrokerOffsetStore), a local
JSON file for broadcasting (LocalFileOffsetStore). Offsets live in memory and are persisted
every few seconds and on shutdown, as RocketMQ clients do."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from client.route import MASTER_ID, broker_addr
from remoting.body import MessageQueue
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError

if TYPE_CHECKING:
    from client.instance import MQClientInstance

log = logging.getLogger(__name__)


class OffsetStore:
    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        if increase_only and offset < self.table.get(mq, -1):
            return
        self.table[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    async def read_from_store(self, mq: MessageQueue) -> int:
        raise NotImplementedError

    async def persist(self, mqs: set[MessageQueue]) -> None:
        raise NotImplementedError


class RemoteBrokerOffsetStore(OffsetStore):
    def __init__(self, instance: MQClientInstance, group: str) -> None:
        super().__init__()
        self.instance = instance
        self.group = group

    async def _addr(self, mq: MessageQueue) -> str | None:
        route = await self.instance.route(mq.topic)
        found = broker_addr(route, mq.broker_name, MASTER_ID) if route is not None else None
        return found[0] if found else None

    async def read_from_store(self, mq: MessageQueue) -> int:
        """The broker's committed offset, -1 if the group has none there."""
        addr = await self._addr(mq)
        if addr is None:
            return -1
        fields = {"consumerGroup": self.group, "topic": mq.topic, "queueId": str(mq.queue_id)}
        response = await self.instance.invoke(
            addr, self.instance.request(RequestCode.QUERY_CONSUMER_OFFSET, fields)
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        if response.code != ResponseCode.SUCCESS:
            raise RemotingError(f"query offset of {mq}: {response.code} {response.remark}")
        offset = int(response.ext("offset"))
        self.table[mq] = offset
        return offset

    async def persist(self, mqs: set[MessageQueue]) -> None:
        for mq in sorted(mqs):
            offset = self.table.get(mq)
            if offset is None or offset < 0:
                continue
            try:
                await self.commit(mq, offset)
            except (RemotingError, OSError) as exc:
                log.info("offset commit of %s failed: %s", mq, exc)

    async def commit(self, mq: MessageQueue, offset: int) -> None:
        addr = await self._addr(mq)
        if addr is None:
            return
        fields = {
            "consumerGroup": self.group,
            "topic": mq.topic,
            "queueId": str(mq.queue_id),
            "commitOffset": str(offset),
        }
        # Answered, not oneway: a commit at shutdown must have landed before the next member
        # (or this one restarted) reads the offset back.
        response = await self.instance.invoke(
            addr, self.instance.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields)
        )
        if response.code != ResponseCode.SUCCESS:
            raise RemotingError(f"commit offset of {mq}: {response.code} {response.remark}")


class LocalFileOffsetStore(OffsetStore):
    """``~/.rocketmq_offsets/<clientId>/<group>/offsets.json`` like Java's default path."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._saved: dict[str, int] = {}
        try:
            self._saved = json.loads(path.read_text())["offsetTable"]
        except (OSError, ValueError, KeyError):
            self._saved = {}

    @staticmethod
    def key(mq: MessageQueue) -> str:
        return f"{mq.topic}@{mq.broker_name}@{mq.queue_id}"

    async def read_from_store(self, mq: MessageQueue) -> int:
        offset = self._saved.get(self.key(mq), -1)
        if offset >= 0:
            self.table[mq] = offset
        return offset

    async def persist(self, mqs: set[MessageQueue]) -> None:
        for mq in mqs:
            if mq in self.table:
                self._saved[self.key(mq)] = self.table[mq]
        await trio.to_thread.run_sync(
            self._write, json.dumps({"offsetTable": self._saved}, sort_keys=True)
        )

    def _write(self, text: str) -> None:
        """Blocking file work, run in a worker thread (never on the Trio loop)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)
