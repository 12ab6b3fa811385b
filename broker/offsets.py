"""ConsumerOffsetManager and the schedule service's delay offsets, persisted under
``config/`` in RocketMQ's layouts (``consumerOffset.json``: ``{"offsetTable":
{"topic@group": {queueId: offset}}}``; ``delayOffset.json``: ``{"offsetTable":
{level: offset}}``).

The periodic persist encodes a copy of the offset table in a worker thread (the encode of
400,000 offsets takes seconds). The copy is made on the loop, where the table lives, and made
copy-on-write: each persist keeps the copy it encoded, and the next one copies only the
(topic, group) entries changed since, a slice of them at a time. Copying all 50,000 entries of
a large broker at once held the loop for 20 ms plus the garbage collections the new dicts
set off (176 ms measured). So every change to ``table`` goes through a method here, which
notes the key."""

from __future__ import annotations

import logging

import trio

from broker.persist import JsonConfigFile
from remoting.body import ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper
from remoting.serde import encode_body, structure_body

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"
COPY_SLICE = 1024  # changed entries copied between two checkpoints (~0.5 ms)


def offset_key(topic: str, group: str) -> str:
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


class ConsumerOffsetManager:
    def __init__(self, file: JsonConfigFile) -> None:
        self.file = file
        # read it freely; change it only through the methods below (they note what changed)
        self.table: dict[str, dict[int, int]] = {}
        # the copy the last persist encoded: never changed once made, so a worker thread may
        # read it while the loop goes on; and the keys changed in ``table`` since
        self._persisted: dict[str, dict[int, int]] = {}
        self._changed: dict[str, None] = {}  # a dict: new keys are copied in the table's order
        # one persist at a time (the periodic one and a slave's sync): two copies made at once
        # would each drop the other's changed entries from the next base
        self._persisting = trio.Lock()

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = offset_key(topic, group)
        self.table.setdefault(key, {})[queue_id] = offset
        self._changed[key] = None

    def replace(self, key: str, offsets: dict[int, int]) -> None:
        """A whole entry at once (a slave taking its master's table)."""
        self.table[key] = dict(offsets)
        self._changed[key] = None

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
        self.replace(offset_key(topic, dest), offsets)
        return len(offsets)

    def remove_group(self, group: str) -> None:
        for topic in self.topics_of_group(group):
            key = offset_key(topic, group)
            self.table.pop(key, None)
            self._changed[key] = None

    def remove_topics(self, topics: set[str]) -> None:
        for key in [k for k in self.table if k.split(TOPIC_GROUP_SEPARATOR, 1)[0] in topics]:
            del self.table[key]
            self._changed[key] = None

    def snapshot(self) -> dict[str, dict[int, int]]:
        return {key: dict(offsets) for key, offsets in self.table.items()}

    def encode(self, pretty: bool = True) -> str:
        return _encode_offsets(self.snapshot(), pretty)

    def load(self) -> None:
        data = self.file.load()
        if data is not None:
            wrapper = structure_body(ConsumerOffsetSerializeWrapper, data)
            self.table = {k: dict(v) for k, v in wrapper.offset_table.items()}
            self._persisted, self._changed = {}, dict.fromkeys(self.table)

    async def persist(self) -> None:
        # The encode, which took 3.8 s of loop time at 400,000 offsets, runs on the copy in a
        # worker thread.
        async with self._persisting:
            text = await trio.to_thread.run_sync(_encode_offsets, await self._copy_changed())
            await self.file.persist(text)

    async def _copy_changed(self) -> dict[str, dict[int, int]]:
        """The table as it is now, sharing the entries unchanged since the last copy; the
        changed ones are copied in slices (an entry changed again meanwhile is noted for the
        next persist, and was copied either before or after that change: each entry is a
        point in time, as Java's copy of its ConcurrentHashMap)."""
        copy = dict(self._persisted)  # 50,000 entries: ~1.5 ms
        changed, self._changed = self._changed, {}
        try:
            for done, key in enumerate(changed, 1):
                offsets = self.table.get(key)
                if offsets is None:
                    copy.pop(key, None)
                else:
                    copy[key] = dict(offsets)
                if done % COPY_SLICE == 0:
                    await trio.lowlevel.checkpoint()
        except BaseException:
            self._changed = changed | self._changed  # cancelled: copied again next time
            raise
        self._persisted = copy
        return copy

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
