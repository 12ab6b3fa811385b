"""ConsumerOffsetManager and the schedule service's delay offsets, persisted under
``config/`` in RocketMQ's layouts (``consumerOffset.json``: ``{"offsetTable":
{"topic@group": {queueId: offset}}}``; ``delayOffset.json``: ``{"offsetTable":
{level: offset}}``)."""

from __future__ import annotations

import logging

import trio

from broker.persist import JsonConfigFile
from remoting.body import ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper
from remoting.serde import encode_body, structure_body

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"


def offset_key(topic: str, group: str) -> str:
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


class ConsumerOffsetManager:
    def __init__(self, file: JsonConfigFile) -> None:
        self.file = file
        self.table: dict[str, dict[int, int]] = {}

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(offset_key(topic, group), {})[queue_id] = offset

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed on that queue."""
        return self.table.get(offset_key(topic, group), {}).get(queue_id, -1)

    def query_all(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(offset_key(topic, group), {}))

    def groups_of_topic(self, topic: str) -> set[str]:
        prefix = topic + TOPIC_GROUP_SEPARATOR
        return {key[len(prefix) :] for key in self.table if key.startswith(prefix)}

    def topics_of_group(self, group: str) -> set[str]:
        suffix = TOPIC_GROUP_SEPARATOR + group
        return {key[: -len(suffix)] for key in self.table if key.endswith(suffix)}

    def clone(self, source: str, dest: str, topic: str) -> int:
        """Give ``dest`` the offsets ``source`` committed on ``topic``; how many queues."""
        offsets = self.table.get(offset_key(topic, source))
        if not offsets:
            return 0
        self.table[offset_key(topic, dest)] = dict(offsets)
        return len(offsets)

    def remove_group(self, group: str) -> None:
        for topic in self.topics_of_group(group):
            self.table.pop(offset_key(topic, group), None)

    def remove_topics(self, topics: set[str]) -> None:
        for key in [k for k in self.table if k.split(TOPIC_GROUP_SEPARATOR, 1)[0] in topics]:
            del self.table[key]

    def snapshot(self) -> dict[str, dict[int, int]]:
        return {key: dict(offsets) for key, offsets in self.table.items()}

    def encode(self, pretty: bool = True) -> str:
        return _encode_offsets(self.snapshot(), pretty)

    def load(self) -> None:
        data = self.file.load()
        if data is not None:
            wrapper = structure_body(ConsumerOffsetSerializeWrapper, data)
            self.table = {k: dict(v) for k, v in wrapper.offset_table.items()}

    async def persist(self) -> None:
        # The table is only touched on the event loop, so it is copied there; the encode, which
        # took 3.8 s of loop time at 400,000 offsets, runs on the copy in a worker thread.
        text = await trio.to_thread.run_sync(_encode_offsets, self.snapshot())
        await self.file.persist(text)

    def persist_sync(self) -> None:
        self.file.persist_sync(self.encode())


def _encode_offsets(table: dict[str, dict[int, int]], pretty: bool = True) -> str:
    wrapper = ConsumerOffsetSerializeWrapper(offset_table=table)
    return encode_body(wrapper, pretty=pretty).decode()


class DelayOffsetTable:
    """How far each delay level's queue (SCHEDULE_TOPIC_XXXX queue level-1) was delivered."""

    def __init__(self, file: JsonConfigFile) -> None:
        self.file = file
        self.table: dict[int, int] = {}

    def get(self, level: int) -> int:
        return self.table.get(level, 0)

    def set(self, level: int, offset: int) -> None:
        self.table[level] = offset

    def encode(self, pretty: bool = True) -> str:
        return encode_body(
            DelayOffsetSerializeWrapper(offset_table=dict(self.table)), pretty=pretty
        ).decode()

    def load(self) -> None:
        data = self.file.load()
        if data is not None:
            self.table = dict(structure_body(DelayOffsetSerializeWrapper, data).offset_table)

    async def persist(self) -> None:
        await self.file.persist(self.encode())

    def persist_sync(self) -> None:
        self.file.persist_sync(self.encode())
